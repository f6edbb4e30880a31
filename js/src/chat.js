// Chat pane: completed turns (sent once), the active turn as per-part patches, a prompt box.
import { badge, fmtSize, frame, h, spinner, statusBadge, textBlock } from "./util.js";

const STATUS_NAMES = { 1: "idle", 2: "error", 8: "in progress", 24: "input needed" };
// an input request's response, as a person says it (the protocol's words showed: "— accept")
const RESPONSE_WORDS = { accept: "answered", decline: "declined", cancel: "cancelled" };
const PLACEHOLDER = "Ask the agent… (Enter sends, Shift+Enter for a new line)";
const READ_ONLY_PLACEHOLDER = {
  replay: "replay: read-only (a replayed log sends nothing)",
  closed: "closed: this lab was closed, nothing can be sent",
  travel: "read-only while viewing an earlier state",
};

export function renderChat({ model, el }) {
  const { root, heading, off } = frame(model, el, "ahp-chat", "Chat");
  const status = h("span", { class: "ahp-count" });
  heading.appendChild(status);
  const log = h("div", { class: "ahp-chat-log", role: "log", "aria-label": "Conversation", tabindex: "0" });
  const olderBtn = h("button", { class: "ahp-btn ahp-btn-small", type: "button", hidden: true, "aria-label": "Show earlier turns" }, "Show earlier turns");
  const turnsBox = h("div", { class: "ahp-turns" });
  const activeBox = h("div", { class: "ahp-active" });
  log.append(olderBtn, turnsBox, activeBox);
  const jumpBtn = h("button", { class: "ahp-btn ahp-btn-small ahp-jump", type: "button", hidden: true, "aria-label": "Jump to latest" }, "↓ Jump to latest");
  const logWrap = h("div", { class: "ahp-chat-logwrap" }, log, jumpBtn);
  const input = h("textarea", { class: "ahp-textarea ahp-prompt-input", rows: 2, placeholder: PLACEHOLDER, "aria-label": "Prompt" });
  const sendBtn = h("button", { class: "ahp-btn ahp-primary", type: "submit", "aria-label": "Send prompt" }, "Send");
  const stopBtn = h("button", { class: "ahp-btn", type: "button", hidden: true, "aria-label": "Stop the running turn" }, "Stop");
  stopBtn.addEventListener("click", () => model.send({ type: "stop" }));
  const form = h("form", { class: "ahp-prompt" }, input, h("div", { class: "ahp-prompt-buttons" }, sendBtn, stopBtn));
  root.append(logWrap, form);

  let ready = false;
  let first = 0; // index of the oldest turn shown
  let turnCount = 0;
  let active = null; // active turn view
  let activePartEls = [];

  const send = () => {
    const text = input.value;
    if (!text.trim() || model.get("read_only")) return;
    model.send({ type: "prompt", text });
    input.value = "";
  };
  form.addEventListener("submit", (e) => { e.preventDefault(); send(); });
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(); }
  });
  olderBtn.addEventListener("click", () => model.send({ type: "older", before: first, count: 10 }));

  // Follow the newest content unless the person scrolled up: then a "jump to latest" button shows.
  // Whatever changes the log's size or its content's (a new part, an approval that reflows the
  // workbench, a theme switch) re-sticks it while following.
  let following = true;
  function atBottom() {
    return log.scrollHeight - log.scrollTop - log.clientHeight <= 24;
  }
  function syncJump() {
    jumpBtn.hidden = following || atBottom();
  }
  function follow() {
    if (following && log.scrollHeight - log.scrollTop - log.clientHeight > 1) log.scrollTop = log.scrollHeight;
    syncJump();
  }
  log.addEventListener("scroll", () => {
    following = atBottom();
    syncJump();
  });
  jumpBtn.addEventListener("click", () => {
    following = true;
    follow();
    log.focus({ preventScroll: true });
  });
  const resized = typeof ResizeObserver === "function" ? new ResizeObserver(() => follow()) : null;
  if (resized) for (const node of [log, turnsBox, activeBox]) resized.observe(node);

  function partEl(p) {
    switch (p.kind) {
      case "markdown":
        return textBlock(p.block, model, { cls: "ahp-part-md", markdown: true });
      case "reasoning": {
        const d = h("details", { class: "ahp-reasoning" }, h("summary", null, "Reasoning"), textBlock(p.block, model));
        return d;
      }
      case "toolCall": {
        const t = p.toolCall;
        return h("div", { class: "ahp-toolcard", "data-tool-call-id": t.toolCallId, "data-state": t.status, "data-outcome": t.failed ? "failed" : null },
          h("div", { class: "ahp-row-flex" }, h("strong", null, t.displayName), statusBadge(t.status, t), badge(t.contributor.label, "ahp-contrib")),
          t.invocation ? h("div", { class: "ahp-dim" }, t.invocation) : null,
          t.summary ? h("div", null, t.summary) : null,
          t.status === "cancelled" ? h("div", { class: "ahp-dim" }, `cancelled (${t.reason || "?"})${t.reasonMessage ? `: ${t.reasonMessage}` : ""}`) : null,
          t.errorMessage ? h("div", { class: "ahp-err-text" }, t.errorMessage) : null);
      }
      case "systemNotification":
        return h("div", { class: "ahp-sysnote", role: "note" }, textBlock(p.block, model));
      case "inputRequest":
        return h("div", { class: "ahp-inputreq", "data-response": p.response || "open" },
          `Question: ${p.message || "input requested"}${p.questions ? ` (${p.questions} question${p.questions > 1 ? "s" : ""})` : ""} — ${RESPONSE_WORDS[p.response] || p.response || "waiting for an answer"}`);
      case "contentRef":
        return h("div", { class: "ahp-mono" }, `resource: ${p.uri}`);
      default:
        return h("div", { class: "ahp-dim" }, `(unsupported part ${p.rawKind})`);
    }
  }

  function turnEl(t) {
    const el2 = h("div", { class: `ahp-turn ${t.active ? "ahp-turn-active" : ""}`, "data-turn-id": t.id, "data-state": t.state });
    const m = t.message || {};
    el2.appendChild(h("div", { class: `ahp-msg ahp-msg-${m.origin || "user"}` },
      h("div", { class: "ahp-msg-who" }, m.origin === "user" ? "You" : m.origin || "user"),
      textBlock(m.block, model),
      m.attachments && m.attachments.length ? h("div", { class: "ahp-dim" }, `attachments: ${m.attachments.join(", ")}`) : null));
    const parts = h("div", { class: "ahp-parts" });
    const els = (t.parts || []).map(partEl);
    parts.append(...els);
    // the view holds a long turn's newest parts: the earliest ones are left out
    if (t.partsOmitted) el2.appendChild(h("div", { class: "ahp-dim ahp-parts-omitted" }, `${t.partsOmitted} earlier parts not shown`));
    el2.appendChild(parts);
    if (t.active) el2.appendChild(activeNote());
    else if (t.state === "error") el2.appendChild(h("div", { class: "ahp-err-text" }, `Turn failed: ${t.error || "error"}`));
    else if (t.state === "cancelled") el2.appendChild(h("div", { class: "ahp-dim" }, "Turn cancelled"));
    return { el: el2, parts, els };
  }

  // a replay or a closed lab runs nothing: its active turn is where the log stopped
  function activeNote() {
    const mode = model.get("mode");
    if (mode === "replay") return h("div", { class: "ahp-working ahp-dim" }, "(still in progress when the log was recorded)");
    if (mode === "closed") return h("div", { class: "ahp-working ahp-dim" }, "(stopped: the lab was closed)");
    return h("div", { class: "ahp-working" }, spinner("agent working"), " working…");
  }

  function drawActive() {
    activeBox.replaceChildren();
    activePartEls = [];
    if (!active) return;
    const r = turnEl(active);
    activeBox.appendChild(r.el);
    activePartEls = r.els;
    activeBox._parts = r.parts;
  }

  function setOlder(hasOlder) {
    olderBtn.hidden = !(first > 0 || hasOlder);
  }

  function reset(view) {
    ready = true;
    first = view.first || 0;
    turnCount = view.turnCount || 0;
    turnsBox.replaceChildren(...(view.turns || []).map((t) => turnEl(t).el));
    active = view.active;
    drawActive();
    setOlder(view.hasOlder);
    follow();
  }

  // apply an active-turn patch to a view object (no DOM): used to promote the active turn
  function applyToView(view, p) {
    for (const [i, part] of p.parts || []) view.parts[i] = part;
    for (const [i, text, length, truncated] of p.appends || []) {
      const part = view.parts[i];
      if (!part || !part.block) continue;
      part.block = {
        ...part.block, text: part.block.text + text,
        length: length ?? (part.block.length || 0) + text.length, truncated: truncated ?? part.block.truncated,
      };
    }
    if (p.length < view.parts.length) view.parts.length = p.length;
    return view;
  }

  function patch(msg) {
    for (const item of msg.turns || []) {
      let view = item.turn;
      if (item.promote) {
        // the active turn finished: the kernel sent only what changed, not the turn again
        if (!active || active.id !== item.promote.id) { model.send({ type: "hello" }); return; }
        view = { ...applyToView({ ...active, parts: [...active.parts] }, item.promote.patch), ...item.promote.fields };
      }
      turnsBox.appendChild(turnEl(view).el);
    }
    turnCount = msg.turnCount ?? turnCount;
    const p = msg.active;
    if (p) {
      if ("reset" in p) {
        active = p.reset;
        drawActive();
      } else if (active && p.id === active.id) {
        for (const [i, part] of p.parts || []) {
          active.parts[i] = part;
          const fresh = partEl(part);
          if (activePartEls[i]) activePartEls[i].replaceWith(fresh);
          else activeBox._parts.appendChild(fresh);
          activePartEls[i] = fresh;
        }
        for (const [i, text, length, truncated] of p.appends || []) {
          const part = active.parts[i];
          if (!part || !part.block) continue;
          const wasTruncated = !!part.block.truncated;
          part.block = {
            ...part.block, text: part.block.text + text,
            length: length ?? (part.block.length || 0) + text.length, truncated: truncated ?? wasTruncated,
          };
          const moreLabel = activePartEls[i] && activePartEls[i].querySelector(".ahp-more > span");
          if (!text && wasTruncated && part.block.truncated && moreLabel) {
            // a capped block kept streaming: only "showing X of Y" changes (no markdown re-render)
            moreLabel.textContent = `showing ${fmtSize(part.block.text.length)} of ${fmtSize(part.block.length)} `;
            continue;
          }
          const fresh = partEl(part);
          // keep a reasoning block open if the person opened it
          if (activePartEls[i] && activePartEls[i].tagName === "DETAILS" && activePartEls[i].open) fresh.open = true;
          if (activePartEls[i]) activePartEls[i].replaceWith(fresh);
          activePartEls[i] = fresh;
        }
        if (p.length < activePartEls.length) {
          for (const extra of activePartEls.splice(p.length)) extra.remove();
          active.parts.length = p.length;
        }
      }
    }
    follow();
  }

  function onMsg(sent) {
    if (!sent || typeof sent !== "object") return;
    // every view of this model gets the same message object, and a view keeps (and appends to)
    // what it gets: a copy of its own, or a second view's text doubled the first's
    const msg = structuredClone(sent);
    if (msg.type === "reset") reset(msg.view);
    else if (msg.type === "patch" && ready) patch(msg);
    else if (msg.type === "older" && ready) {
      const h0 = log.scrollHeight;
      const frag = document.createDocumentFragment();
      for (const t of msg.turns || []) frag.appendChild(turnEl(t).el);
      turnsBox.prepend(frag);
      first = msg.first;
      setOlder(false);
      log.scrollTop += log.scrollHeight - h0;
      syncJump();
    }
  }
  model.on("msg:custom", onMsg);

  function drawHeader() {
    const hd = model.get("header") || {};
    const ro = !!model.get("read_only");
    const act = (hd.status ?? 0) & 0x1f;
    status.textContent = ` ${hd.title ? `${hd.title} · ` : ""}${STATUS_NAMES[act] || ""}`;
    root.dataset.chatStatus = STATUS_NAMES[act] || "";
    input.disabled = ro;
    sendBtn.disabled = ro;
    stopBtn.hidden = ro || !hd.active;
    input.placeholder = ro ? READ_ONLY_PLACEHOLDER[model.get("mode")] || READ_ONLY_PLACEHOLDER.travel : PLACEHOLDER;
  }
  drawHeader();
  model.on("change:header", drawHeader);
  model.on("change:read_only", drawHeader);
  model.on("change:mode", drawHeader);
  model.on("change:mode", drawActive);
  // anywidget drops custom messages sent before this view existed: ask for the conversation
  model.send({ type: "hello" });
  return () => {
    off();
    if (resized) resized.disconnect();
    model.off("msg:custom", onMsg);
    model.off("change:header", drawHeader);
    model.off("change:read_only", drawHeader);
    model.off("change:mode", drawHeader);
    model.off("change:mode", drawActive);
  };
}
