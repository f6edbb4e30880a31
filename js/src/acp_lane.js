// The inspector's ACP lane: the raw ACP frames of the session beside the AHP transition log.
// Each frame lists the seqs it produced (incoming) or was caused by (outgoing); clicking a seq
// selects that transition, and the selected transition's detail lists its frames (both ways).
import { fmtTime, h, textBlock } from "./util.js";

const PAGE = 200;

export function acpLane({ model, selectSeq }) {
  const toggle = h("input", { type: "checkbox", "aria-label": "Show the ACP lane", "data-focus": "acp-lane" });
  const toggleLabel = h("label", { class: "ahp-toggle ahp-acp-toggle", hidden: true }, toggle, " ACP lane");
  const list = h("div", { class: "ahp-acp-list", role: "list", "aria-label": "ACP frames" });
  const more = h("button", { class: "ahp-btn ahp-btn-small", type: "button" }, "earlier frames");
  const frameDetail = h("div", { class: "ahp-acp-detail", "aria-live": "polite" });
  const el = h("div", { class: "ahp-acp-lane", hidden: true, "data-lane": "acp" },
    h("div", { class: "ahp-label" }, "ACP frames (agent ⇄ host) and the AHP transitions each produced"),
    h("div", { class: "ahp-acp-body" }, h("div", { class: "ahp-acp-col" }, more, list), frameDetail));

  let rows = new Map(); // frame index -> row
  let from = null; // first row position requested
  let inflight = false;

  function request(start, count) {
    if (inflight) return;
    inflight = true;
    model.send({ type: "acpWindow", start, count, req: `acp:${start}` });
  }
  function refresh() {
    const acp = model.get("acp") || {};
    toggleLabel.hidden = !acp.available;
    el.hidden = !(acp.available && toggle.checked);
    if (el.hidden) return;
    const total = acp.total || 0;
    if (from == null) from = Math.max(0, total - PAGE);
    request(from, total - from);
  }
  function seqChip(seq) {
    const selected = model.get("selected_seq") === seq;
    return h("button", {
      class: `ahp-btn ahp-btn-small ahp-seq-chip ${selected ? "ahp-selected" : ""}`, type: "button",
      "data-seq": seq, "aria-label": `select transition ${seq}`,
      onclick: (e) => { e.stopPropagation(); selectSeq(seq); },
    }, `#${seq}`);
  }
  function frameEl(r) {
    const sel = model.get("selected_seq");
    const linked = sel != null && r.seqs.includes(sel);
    const chosen = model.get("selected_frame") === r.frame;
    return h("div", {
      class: `ahp-acp-row ahp-acp-${r.direction} ${linked ? "ahp-linked" : ""} ${chosen ? "ahp-selected" : ""}`,
      role: "listitem", tabindex: "-1", "data-frame": r.frame, "data-direction": r.direction,
      onclick: () => { model.set("selected_frame", r.frame); model.save_changes(); if (r.seqs.length) selectSeq(r.seqs[r.seqs.length - 1]); },
    },
      h("span", { class: "ahp-acp-dir", title: r.direction === "in" ? "agent → host" : "host → agent" }, r.direction === "in" ? "←" : "→"),
      h("span", { class: "ahp-mono ahp-acp-label" }, r.label),
      h("span", { class: "ahp-acp-seqs" }, r.seqs.map(seqChip), r.moreSeqs ? h("span", { class: "ahp-dim" }, ` +${r.moreSeqs}`) : null),
    );
  }
  function draw() {
    const sorted = [...rows.values()].sort((a, b) => a.frame - b.frame);
    list.replaceChildren(...sorted.map(frameEl));
    more.hidden = !from;
    const linked = list.querySelector(".ahp-linked");
    if (linked && linked.scrollIntoView) linked.scrollIntoView({ block: "nearest" });
  }
  function drawFrameDetail() {
    const d = model.get("frame_detail") || {};
    if (d.frame == null) { frameDetail.replaceChildren(h("div", { class: "ahp-empty" }, "Select a frame to see its JSON-RPC message.")); return; }
    frameDetail.replaceChildren(
      h("div", { class: "ahp-detail-head" }, h("strong", null, `${d.direction === "in" ? "←" : "→"} ${d.label}`), " ",
        h("span", { class: "ahp-dim" }, `${d.kind} · ${fmtTime(d.ms != null ? d.ms / 1000 : null)}`)),
      textBlock(d.message, model, { cls: "ahp-json" }),
    );
  }
  function onMsg(msg) {
    if (!msg || msg.type !== "acpRows") return;
    inflight = false;
    for (const r of msg.rows) rows.set(r.frame, r);
    draw();
  }
  more.addEventListener("click", () => { from = Math.max(0, (from || 0) - PAGE); request(from, PAGE); });
  toggle.addEventListener("change", refresh);

  // the selected transition's frames, for the transition detail pane
  function linksFor(detail) {
    const frames = detail && detail.acpFrames;
    if (!frames || !frames.length) return null;
    return h("div", { class: "ahp-acp-links", "data-acp-links": "" },
      h("div", { class: "ahp-label" }, "ACP frames behind it"),
      frames.map((f) => h("button", {
        class: "ahp-btn ahp-btn-small ahp-frame-chip", type: "button", "data-frame": f.frame,
        onclick: () => { toggle.checked = true; refresh(); model.set("selected_frame", f.frame); model.save_changes(); },
      }, `${f.direction === "in" ? "←" : "→"} ${f.label}`)));
  }

  model.on("msg:custom", onMsg);
  model.on("change:acp", refresh);
  model.on("change:frame_detail", drawFrameDetail);
  model.on("change:selected_frame", draw);
  model.on("change:selected_seq", draw);
  refresh();
  drawFrameDetail();
  return {
    toggle: toggleLabel,
    el,
    linksFor,
    dispose() {
      model.off("msg:custom", onMsg);
      model.off("change:acp", refresh);
      model.off("change:frame_detail", drawFrameDetail);
      model.off("change:selected_frame", draw);
      model.off("change:selected_seq", draw);
    },
  };
}
