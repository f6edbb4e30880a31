// Model calls: every request a LoopAgent sent, with the byte-identical prefix of the previous
// request highlighted, so a person sees at once when an extension breaks the KV cache.
import { badge, frame, h, rafThrottle, setChildren, textBlock } from "./util.js";

const MARK_LABEL = { prefix: "stable prefix", partial: "prefix ends here", new: "new", tail: "synthetic tail" };

function pct(x) {
  return x == null ? "–" : `${Math.round(x * 100)}%`;
}

function stableBadge(stable) {
  if (stable === null || stable === undefined) return badge("first call", "ahp-mc-first", { "data-stable": "first" });
  return stable
    ? badge("prefix kept", "ahp-mc-ok", { "data-stable": "true" })
    : badge("prefix broken", "ahp-mc-broken", { "data-stable": "false" });
}

function bar(share) {
  const fill = h("span", { class: "ahp-mc-fill" });
  fill.style.width = `${Math.max(0, Math.min(100, (share || 0) * 100))}%`;
  return h("span", { class: "ahp-mc-bar", role: "img", "aria-label": `stable prefix ${pct(share)}` }, fill);
}

export function renderModelCalls({ model, el }) {
  const { root, heading, off } = frame(model, el, "ahp-modelcalls", "Model calls");
  const count = h("span", { class: "ahp-count" });
  heading.appendChild(count);
  const list = h("div", { class: "ahp-mc-list", role: "listbox", "aria-label": "Model calls" });
  const detail = h("div", { class: "ahp-mc-detail", "aria-live": "polite" });
  root.appendChild(h("div", { class: "ahp-mc-body" }, list, detail));
  const select = (i) => {
    model.set("selected", i);
    model.save_changes();
  };

  function drawRows() {
    const rows = model.get("rows") || [];
    const s = model.get("summary") || {};
    count.textContent = s.total
      ? ` ${s.total} call${s.total === 1 ? "" : "s"} · mean stable prefix ${pct(s.stableShare)} · ${s.broken || 0} broken`
      : "";
    const chosen = s.selected;
    if (!rows.length) {
      setChildren(list, h("div", { class: "ahp-empty" }, "No model calls yet. Send a prompt."));
      return;
    }
    setChildren(
      list,
      s.omitted ? h("div", { class: "ahp-dim" }, `${s.omitted} earlier calls not shown`) : null,
      rows.map((r) =>
        h("div", {
          class: `ahp-mc-row ${r.index === chosen ? "ahp-selected" : ""}`,
          role: "option", tabindex: "0", "aria-selected": r.index === chosen ? "true" : "false",
          "data-index": r.index, "data-stable": r.stable === null ? "first" : String(r.stable),
          onclick: () => select(r.index),
          onkeydown: (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); select(r.index); } },
        },
        h("span", { class: "ahp-mono ahp-mc-n" }, `#${r.index}`),
        bar(r.share),
        h("span", { class: "ahp-mc-pct" }, pct(r.share)),
        stableBadge(r.stable),
        h("span", { class: "ahp-dim" }, `${r.messages} msgs · ${r.tools} tools`),
        r.notices ? badge(`${r.notices} new notice${r.notices > 1 ? "s" : ""}`, "ahp-mc-notice") : null,
        r.synthetic ? badge(`tail ${r.synthetic}`, "ahp-mc-tailbadge") : null,
        r.reports ? badge(`${r.reports} hook problem${r.reports > 1 ? "s" : ""}`, "ahp-mc-broken") : null,
        h("span", { class: "ahp-mc-said" }, r.pending ? "waiting for the model…" : r.said)),
      ),
    );
  }

  function drawDetail() {
    const d = model.get("detail") || {};
    if (d.index === undefined) {
      setChildren(detail, h("div", { class: "ahp-empty" }, "Select a call to see what the model saw."));
      return;
    }
    const legend = h("div", { class: "ahp-mc-legend" },
      ...["prefix", "new", "tail"].map((k) => h("span", { class: `ahp-mc-key ahp-mc-${k}` }, MARK_LABEL[k])),
      h("span", { class: "ahp-mc-key ahp-mc-noticekey" }, "capability notice"));
    const messages = (d.messages || []).map((m) =>
      h("div", {
        class: `ahp-mc-msg ahp-mc-${m.mark} ${m.kind === "notice" ? "ahp-mc-isnotice" : ""}`,
        "data-mark": m.mark, "data-kind": m.kind, "data-i": m.i,
      },
      h("div", { class: "ahp-row-flex" },
        badge(m.role, "ahp-mc-role"),
        m.kind === "notice" ? badge("capability notice", "ahp-mc-notice") : null,
        m.mark === "tail" ? badge(`synthetic · ${m.extension || "hook"}`, "ahp-mc-tailbadge") : null,
        h("span", { class: "ahp-dim" }, MARK_LABEL[m.mark] || m.mark)),
      textBlock(m.block, model)));
    setChildren(detail,
      h("div", { class: "ahp-mc-head", "data-index": d.index },
        h("strong", null, `Call #${d.index}`), " ", stableBadge(d.stable), " ",
        h("span", null, `stable prefix ${pct(d.share)} (${d.prefixBytes} of ${d.totalBytes} bytes`
          + `${d.previous != null ? `, vs call #${d.previous}` : ""})`),
        h("div", { class: "ahp-dim ahp-mono" }, `${d.model} · turn ${d.turnId}`)),
      d.header === "new" || d.header === "partial"
        ? h("div", { class: "ahp-err-text" }, "The system prompt or the tool list changed: nothing after it can be cached.")
        : null,
      (d.reports || []).map((r) => h("div", { class: "ahp-warn-text" }, r)),
      d.error ? h("div", { class: "ahp-err-text" }, d.error) : null,
      legend,
      h("details", { class: "ahp-mc-sec" }, h("summary", null, "System prompt"), textBlock(d.system, model)),
      h("div", { class: "ahp-label" }, `resident tools (${(d.tools || []).length})`),
      h("div", { class: "ahp-row-flex ahp-mc-tools" }, (d.tools || []).map((t) => badge(t, "ahp-type"))),
      h("details", { class: "ahp-mc-sec" }, h("summary", null, "Tool definitions"), textBlock(d.toolDefinitions, model)),
      h("div", { class: "ahp-label" }, `messages (${(d.messages || []).length + (d.messagesOmitted || 0)})`),
      d.messagesOmitted ? h("div", { class: "ahp-dim" }, `${d.messagesOmitted} earlier messages not shown`) : null,
      messages,
      h("div", { class: "ahp-label" }, "response"),
      d.response ? h("div", { class: "ahp-mc-msg ahp-mc-response" }, textBlock(d.response.block, model),
        d.response.usage ? h("div", { class: "ahp-dim" }, `${d.response.usage.inputTokens} in · ${d.response.usage.outputTokens} out`) : null)
        : h("div", { class: "ahp-dim" }, d.error ? "no response" : "waiting for the model…"));
  }

  drawRows();
  drawDetail();
  const rows = rafThrottle(drawRows);
  const det = rafThrottle(drawDetail);
  model.on("change:rows", rows);
  model.on("change:summary", rows);
  model.on("change:detail", det);
  return () => {
    off();
    model.off("change:rows", rows);
    model.off("change:summary", rows);
    model.off("change:detail", det);
  };
}
