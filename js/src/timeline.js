// Tool-call timeline: one lane per call (windowed), detail pane with the state machine.
import { renderMachine } from "./machine.js";
import { badge, fmtTime, frame, h, rafThrottle, setChildren, statusBadge, textBlock } from "./util.js";
import { contentList } from "./content.js";

const LANE_H = 30;
const OVERSCAN = 10;
const MAX_LANES_SHOWN = 10;

export function renderTimeline({ model, el }) {
  const { root, heading, off } = frame(model, el, "ahp-timeline", "Tool calls");
  const counts = h("span", { class: "ahp-count" });
  heading.appendChild(counts);
  const scroller = h("div", { class: "ahp-tl-lanes", role: "listbox", "aria-label": "Tool calls", tabindex: "-1" });
  const spacer = h("div", { class: "ahp-spacer" });
  scroller.appendChild(spacer);
  const detail = h("div", { class: "ahp-tl-detail", "aria-live": "polite" });
  const machine = h("div", { class: "ahp-tl-machine" });
  root.appendChild(h("div", { class: "ahp-tl-body" }, scroller, detail, machine));
  let laneEls = new Map();
  let stick = true;

  const select = (key) => {
    model.set("selected", key);
    model.save_changes();
  };

  function requestWindow() {
    const first = Math.floor(scroller.scrollTop / LANE_H);
    const visible = Math.ceil((scroller.clientHeight || 300) / LANE_H);
    const ws = model.get("window_start");
    const wc = model.get("window_count");
    const total = (model.get("meta") || {}).total || 0;
    const need0 = Math.max(0, first - 2);
    const need1 = Math.min(total, first + visible + 2);
    if (need0 < ws || need1 > ws + wc) {
      const start = Math.max(0, first - OVERSCAN);
      model.set("window_start", start);
      model.set("window_count", Math.max(40, visible + 2 * OVERSCAN));
      model.save_changes();
    }
  }
  const onScroll = rafThrottle(() => {
    stick = scroller.scrollTop + scroller.clientHeight >= scroller.scrollHeight - LANE_H;
    requestWindow();
  });
  scroller.addEventListener("scroll", onScroll);

  function lane(l, axis, selected) {
    const lo = axis.min ?? 0;
    const hi = Math.max(axis.max ?? 1, lo + 1);
    const span = hi - lo;
    const track = h("div", { class: "ahp-track", "aria-hidden": "true" });
    const segs = l.segments || [];
    segs.forEach((sg, i) => {
      const from = sg.seq == null ? lo : sg.seq;
      const next = segs[i + 1];
      const terminal = sg.status === "completed" || sg.status === "cancelled";
      let to = next ? (next.seq ?? hi) : terminal ? from : l.active ? hi : (l.lastSeq ?? from);
      const left = ((from - lo) / span) * 100;
      let width = ((to - from) / span) * 100;
      if (!next && terminal) width = 0;
      const seg = h("div", {
        class: `ahp-seg ${!next && !terminal && l.active ? "ahp-seg-live" : ""}`,
        "data-state": !next && l.failed ? "failed" : sg.status,
        title: `${sg.status}${sg.seq != null ? ` from seq ${sg.seq}` : ""}`,
      });
      seg.style.left = `${Math.max(0, Math.min(100, left))}%`;
      seg.style.width = `max(6px, ${Math.max(0, Math.min(100 - left, width))}%)`;
      track.appendChild(seg);
    });
    const who = l.contributor || {};
    const row = h("div", {
      class: `ahp-lane ${selected ? "ahp-selected" : ""}`,
      role: "option",
      tabindex: selected || (!model.get("selected") && l.index === 0) ? "0" : "-1",
      "aria-selected": selected ? "true" : "false",
      "aria-label": `${l.displayName}, ${l.statusLabel || l.status}${who.label ? `, by ${who.label}` : ""}`,
      "data-tool-call-id": l.toolCallId,
      "data-key": l.key,
      "data-state": l.status,
      "data-outcome": l.failed ? "failed" : null,
      "data-index": l.index,
      onclick: () => select(l.key),
      onkeydown: (e) => onKey(e, l),
    },
      h("span", { class: "ahp-lane-name", title: `${l.displayName} (${l.toolName})` }, l.displayName),
      badge(who.label || "host", "ahp-contrib", { "data-contributor": who.kind }),
      track,
      statusBadge(l.status, l),
    );
    row.style.top = `${l.index * LANE_H}px`;
    return row;
  }

  function onKey(e, l) {
    const total = (model.get("meta") || {}).total || 0;
    let idx = null;
    if (e.key === "ArrowDown") idx = Math.min(total - 1, l.index + 1);
    else if (e.key === "ArrowUp") idx = Math.max(0, l.index - 1);
    else if (e.key === "Enter" || e.key === " ") { select(l.key); e.preventDefault(); return; }
    if (idx === null) return;
    e.preventDefault();
    const target = scroller.querySelector(`[data-index="${idx}"]`);
    if (target) { target.focus(); select(target.dataset.key); }
    const top = idx * LANE_H;
    if (top < scroller.scrollTop) scroller.scrollTop = top;
    else if (top + LANE_H > scroller.scrollTop + scroller.clientHeight) scroller.scrollTop = top + LANE_H - scroller.clientHeight;
  }

  function drawLanes() {
    const vm = { ...(model.get("meta") || {}), lanes: model.get("lanes") || [] };
    const total = vm.total || 0;
    const wasAtEnd = stick;
    spacer.style.height = `${total * LANE_H}px`;
    // as tall as its lanes (one for the "no tool calls" line), scrolling beyond MAX_LANES_SHOWN
    scroller.style.height = `${Math.min(MAX_LANES_SHOWN, Math.max(1, total)) * LANE_H + 2}px`;
    const c = vm.counts || {};
    counts.textContent = total ? ` ${total} · ${Object.entries(c).map(([k, v]) => `${v} ${k}`).join(" · ")}` : "";
    const focusedKey = document.activeElement && scroller.contains(document.activeElement) ? document.activeElement.dataset.key : null;
    const next = new Map();
    for (const l of vm.lanes || []) {
      const el2 = lane(l, vm.axis || {}, l.key === vm.selected);
      next.set(l.key, el2);
    }
    for (const [, node] of laneEls) node.remove();
    for (const [, node] of next) scroller.appendChild(node);
    laneEls = next;
    if (focusedKey && next.has(focusedKey)) next.get(focusedKey).focus({ preventScroll: true });
    if (!total) {
      scroller.appendChild(Object.assign(h("div", { class: "ahp-empty ahp-abs" }, "No tool calls yet."), {}));
    } else {
      const empty = scroller.querySelector(".ahp-empty");
      if (empty) empty.remove();
    }
    if (wasAtEnd && total * LANE_H > scroller.clientHeight) {
      const bottom = total * LANE_H - scroller.clientHeight;
      if (Math.abs(scroller.scrollTop - bottom) > 2) scroller.scrollTop = bottom;
    }
    requestWindow();
  }

  function drawMachine() {
    const m = model.get("machine") || {};
    if (!m.nodes) machine.replaceChildren();
    else setChildren(machine, renderMachine(m));
  }

  function drawDetail() {
    const d = model.get("detail") || {};
    if (!d.key) {
      detail.replaceChildren(h("div", { class: "ahp-empty" }, "Select a tool call to see its steps and its path through the state machine."));
      return;
    }
    const steps = h("table", { class: "ahp-steps" },
      h("thead", null, h("tr", null, h("th", null, "seq"), h("th", null, "action"), h("th", null, "step"), h("th", null, "by"))),
      h("tbody", null, (d.steps || []).map((s) =>
        h("tr", { "data-seq": s.seq, title: fmtTime(s.time) },
          h("td", { class: "ahp-mono" }, s.count > 1 ? `${s.seq}–${s.seqEnd} (×${s.count})` : String(s.seq ?? "")),
          h("td", { class: "ahp-mono" }, s.action.replace(/^chat\//, "")),
          h("td", null, s.from ? `${s.from} → ${s.to}` : `→ ${s.to}`),
          h("td", { class: "ahp-dim" }, s.origin || ""),
        ))),
    );
    const sections = [];
    if (d.partialInput && d.partialInput.text) sections.push(h("div", { class: "ahp-sec" }, h("div", { class: "ahp-label" }, "partial input (streaming)"), textBlock(d.partialInput, model)));
    if (d.toolInput && d.toolInput.block) sections.push(h("div", { class: "ahp-sec" }, h("div", { class: "ahp-label" }, "input"), textBlock(d.toolInput.block, model)));
    if (d.toolInput && d.toolInput.ref) sections.push(h("div", { class: "ahp-sec" }, h("div", { class: "ahp-label" }, "input (by reference)"), h("div", { class: "ahp-mono" }, d.toolInput.uri)));
    if (d.content && d.content.length) sections.push(h("div", { class: "ahp-sec" }, h("div", { class: "ahp-label" }, d.status === "running" ? "streamed content" : "content"), contentList(d.content, model)));
    if (d.pastTense) sections.push(h("div", { class: `ahp-sec ${d.success ? "" : "ahp-failed"}` }, h("div", { class: "ahp-label" }, d.success ? "result" : "result (failed)"), textBlock(d.pastTense, model), d.errorMessage ? h("div", { class: "ahp-err-text" }, d.errorMessage) : null));
    if (d.structuredContent) sections.push(h("div", { class: "ahp-sec" }, h("div", { class: "ahp-label" }, "structured content"), textBlock(d.structuredContent, model)));
    if (d.status === "cancelled") sections.push(h("div", { class: "ahp-sec ahp-failed" }, h("div", { class: "ahp-label" }, "cancelled"), h("div", null, `reason: ${d.reason || "?"}`), d.reasonBlock ? textBlock(d.reasonBlock, model) : null));
    if (d.status === "auth-required") sections.push(h("div", { class: "ahp-sec ahp-auth-panel" }, `Waiting for authentication (${d.authReason}) of ${d.authResource}`));
    setChildren(detail,
      h("div", { class: "ahp-detail-head", "data-tool-call-id": d.toolCallId, "data-state": d.status },
        h("strong", null, d.displayName), " ", statusBadge(d.status, d), " ",
        badge((d.contributor || {}).label || "host", "ahp-contrib"),
        h("div", { class: "ahp-dim ahp-mono" }, `${d.toolName} · ${d.toolCallId} · turn ${d.turnId}`),
        d.intention ? h("div", { class: "ahp-dim" }, d.intention) : null,
        d.invocation ? h("div", null, d.invocation) : null,
      ),
      sections,
      h("div", { class: "ahp-label" }, `steps${d.stepsOmitted ? ` (last ${d.steps.length}; ${d.stepsOmitted} earlier)` : ""}`),
      steps,
    );
  }

  drawLanes();
  drawDetail();
  drawMachine();
  // each part redraws only when it changed (a streaming tool changes meta + detail, not the lanes
  // or the diagram)
  const onLanes = rafThrottle(drawLanes);
  const onDetail = rafThrottle(drawDetail);
  const onMachine = rafThrottle(drawMachine);
  model.on("change:meta", onLanes);
  model.on("change:lanes", onLanes);
  model.on("change:detail", onDetail);
  model.on("change:machine", onMachine);
  return () => {
    off();
    model.off("change:meta", onLanes);
    model.off("change:lanes", onLanes);
    model.off("change:detail", onDetail);
    model.off("change:machine", onMachine);
    scroller.removeEventListener("scroll", onScroll);
  };
}
