// Transition inspector: virtualized table fed by window requests, filters, detail, time travel.
import { acpLane } from "./acp_lane.js";
import { fmtTime, frame, h, rafThrottle, setChildren, textBlock } from "./util.js";

const ROW_H = 24;
const OVERSCAN = 30;
const COLUMNS = ["seq", "time", "channel", "action", "origin", "result"];
const MIN_COL = 28; // px: the narrowest a person can drag a column
const MAX_AUTO_COL = 420; // px: content wider than this (a long rejection reason) ellipsizes, full on hover
const CELL_PAD = 6; // the grid gap between cells

/** A JSON pointer with a line-break opportunity after each "/" (paths wrap between segments). */
function pathNodes(path) {
  const out = [];
  String(path).split("/").forEach((seg, i) => {
    if (i > 0) out.push("/", document.createElement("wbr"));
    if (seg) out.push(seg);
  });
  return out;
}

// "chat …-1234567890ab" -> "chat …890ab": the column is narrow, and the tail tells channels apart
function shortChannel(label) {
  return String(label).replace(/….*(.{5})$/, "…$1");
}

export function renderInspector({ model, el }) {
  const { root, heading, off } = frame(model, el, "ahp-inspector", "Transitions");
  const count = h("span", { class: "ahp-count" });
  heading.appendChild(count);

  const sel = (label, key) => {
    const s = h("select", { class: "ahp-select", "aria-label": label, "data-filter": key });
    s.addEventListener("change", () => {
      model.set("filters", { ...(model.get("filters") || {}), [key]: s.value });
      model.save_changes();
    });
    return s;
  };
  const fChannel = sel("Filter by channel", "channel");
  const fType = sel("Filter by action type", "type");
  const fOrigin = sel("Filter by origin", "origin");
  const fStatus = sel("Filter by result", "status");
  fStatus.replaceChildren(h("option", { value: "" }, "accepted + rejected"), h("option", { value: "accepted" }, "accepted"), h("option", { value: "rejected" }, "rejected"));
  const follow = h("input", { type: "checkbox", checked: true, "aria-label": "Follow new transitions" });
  const travel = h("input", { type: "checkbox", "aria-label": "View state at the selected seq", "data-focus": "time-travel" });
  travel.addEventListener("change", () => {
    model.set("time_travel", travel.checked);
    model.save_changes();
  });
  root.appendChild(h("div", { class: "ahp-toolbar" }, fChannel, fType, fOrigin, fStatus,
    h("label", { class: "ahp-toggle" }, follow, " follow"),
    h("label", { class: "ahp-toggle ahp-travel" }, travel, " view state at this seq")));

  // Columns are as wide as their widest value seen so far (they only grow, so rows never jump),
  // or as wide as the person dragged them; a cell's full value is in its tooltip.
  const autoW = Object.fromEntries(COLUMNS.map((c) => [c, MIN_COL]));
  const userW = {};
  const head = h("div", { class: "ahp-trow ahp-thead", role: "row" },
    COLUMNS.map((c) => h("span", { role: "columnheader", class: `ahp-c-${c}`, "data-col": c }, h("span", { class: "ahp-col-name" }, c),
      c === "result" ? null : h("span", {
        class: "ahp-col-resize", role: "separator", "aria-orientation": "vertical", tabindex: "0",
        "aria-label": `Resize the ${c} column (arrow keys; double-click fits it to its content)`, "data-col": c,
      }))));
  const scroller = h("div", { class: "ahp-tscroll", role: "rowgroup", tabindex: "0", "aria-label": "Transition rows" });
  const spacer = h("div", { class: "ahp-spacer" });
  scroller.appendChild(spacer);
  const inner = h("div", { class: "ahp-table-inner" }, head, scroller);
  const table = h("div", { class: "ahp-table", role: "table", "aria-label": "Transitions" }, inner);
  const detail = h("div", { class: "ahp-tdetail", "aria-live": "polite" });
  const body = h("div", { class: "ahp-insp-body" }, table, detail);
  root.appendChild(body);
  // a transition picked in the ACP lane is scrolled to in the table (which stops following the end)
  const lane = acpLane({ model, selectSeq: (seq) => { selectSeq(seq); follow.checked = false; model.send({ type: "reveal", seq }); } });
  root.querySelector(".ahp-toolbar").appendChild(lane.toggle);
  root.appendChild(lane.el);

  function colWidth(c) {
    return userW[c] ?? autoW[c];
  }
  function applyColumns() {
    const fixed = COLUMNS.slice(0, -1).map((c) => `${colWidth(c)}px`);
    const last = colWidth("result");
    inner.style.setProperty("--ahp-cols", `${fixed.join(" ")} minmax(${last}px, 1fr)`);
    const sum = COLUMNS.reduce((a, c) => a + colWidth(c), 0) + CELL_PAD * (COLUMNS.length - 1) + 2 * CELL_PAD + 2;
    inner.style.minWidth = `${sum}px`;
    body.style.setProperty("--ahp-table-w", `${sum + 16}px`); // and room for the vertical scrollbar
  }
  const range = document.createRange();
  function measureColumns(rowsToMeasure) {
    // the width of each cell's content (not of the cell, which a wide column stretches)
    let grew = false;
    for (const row of rowsToMeasure) {
      for (const cell of row.children) {
        const c = cell.dataset.col;
        if (!c) continue;
        range.selectNodeContents(cell.firstElementChild && cell.firstElementChild.classList.contains("ahp-col-name") ? cell.firstElementChild : cell);
        const w = Math.min(MAX_AUTO_COL, Math.ceil(range.getBoundingClientRect().width) + 2);
        if (w > autoW[c]) { autoW[c] = w; grew = true; }
      }
    }
    if (grew) applyColumns();
  }
  applyColumns();
  head.addEventListener("pointerdown", (e) => {
    const grip = e.target.closest && e.target.closest(".ahp-col-resize");
    if (!grip) return;
    e.preventDefault();
    const c = grip.dataset.col;
    const x0 = e.clientX;
    const w0 = colWidth(c);
    grip.setPointerCapture(e.pointerId);
    const move = (ev) => { userW[c] = Math.max(MIN_COL, Math.round(w0 + ev.clientX - x0)); applyColumns(); };
    const up = () => { grip.removeEventListener("pointermove", move); grip.removeEventListener("pointerup", up); grip.removeEventListener("pointercancel", up); };
    grip.addEventListener("pointermove", move);
    grip.addEventListener("pointerup", up);
    grip.addEventListener("pointercancel", up);
  });
  head.addEventListener("dblclick", (e) => {
    const grip = e.target.closest && e.target.closest(".ahp-col-resize");
    if (grip) { delete userW[grip.dataset.col]; applyColumns(); }
  });
  head.addEventListener("keydown", (e) => {
    const grip = e.target.closest && e.target.closest(".ahp-col-resize");
    if (!grip || (e.key !== "ArrowLeft" && e.key !== "ArrowRight")) return;
    e.preventDefault();
    const c = grip.dataset.col;
    userW[c] = Math.max(MIN_COL, colWidth(c) + (e.key === "ArrowRight" ? 10 : -10));
    applyColumns();
  });

  let cache = new Map(); // filtered index -> row
  let version = model.get("version");
  let total = model.get("total") || 0;
  let inflight = new Set();
  let rowEls = new Map();

  function fillSelect(s, values, all, current, labels) {
    const opts = [h("option", { value: "" }, all)].concat(values.map((v) => h("option", { value: v }, labels ? labels(v) : v)));
    if (current && !values.includes(current)) opts.push(h("option", { value: current }, current));
    s.replaceChildren(...opts);
    s.value = current || "";
  }
  function drawOptions() {
    const o = model.get("options") || {};
    const f = model.get("filters") || {};
    fillSelect(fChannel, o.channels || [], "all channels", f.channel);
    const types = o.types || [];
    const prefixes = [...new Set(types.map((t) => t.split("/")[0] + "/"))];
    fillSelect(fType, prefixes.concat(types), "all actions", f.type, (v) => (v.endsWith("/") ? `${v}*` : v));
    fillSelect(fOrigin, o.origins || [], "all origins", f.origin);
    fStatus.value = f.status || "";
  }

  function visibleRange() {
    const first = Math.floor(scroller.scrollTop / ROW_H);
    const n = Math.ceil((scroller.clientHeight || 300) / ROW_H) + 1;
    return [first, Math.min(total, first + n)];
  }

  function request(start, count) {
    const key = `${version}:${start}`;
    if (inflight.has(key)) return;
    inflight.add(key);
    model.send({ type: "window", start, count, req: key });
  }

  function ensureRows() {
    const [a, b] = visibleRange();
    for (let i = a; i < b; i++) {
      if (!cache.has(i)) {
        const start = Math.max(0, a - OVERSCAN);
        request(start, b - start + OVERSCAN);
        return;
      }
    }
  }

  // a click selects one transition; shift+click (or shift+arrow) selects the range up to it
  function selectSeq(seq, extend) {
    if (extend && model.get("selected_seq") != null) model.set("range_seq", seq);
    else {
      model.set("range_seq", null);
      model.set("selected_seq", seq);
    }
    model.save_changes();
  }
  function inRange(seq) {
    const a = model.get("selected_seq");
    const b = model.get("range_seq");
    if (a == null || b == null) return false;
    return seq >= Math.min(a, b) && seq <= Math.max(a, b);
  }
  function rowState(r) {
    return `${model.get("selected_seq") === r.seq ? "s" : ""}${inRange(r.seq) ? "r" : ""}`;
  }

  function rowEl(r) {
    const selected = model.get("selected_seq") === r.seq;
    const ranged = inRange(r.seq);
    const row = h("div", {
      class: `ahp-trow ${r.rejected ? "ahp-rejected" : ""} ${selected ? "ahp-selected" : ""} ${ranged ? "ahp-in-range" : ""}`,
      role: "row", tabindex: "-1", "data-seq": r.seq, "data-index": r.i, "aria-selected": selected || ranged ? "true" : "false",
      "aria-label": `seq ${r.seq} ${r.type} ${r.rejected ? "rejected" : "accepted"}`, "data-state": rowState(r),
      onclick: (e) => selectSeq(r.seq, e.shiftKey),
    },
      h("span", { class: "ahp-c-seq ahp-mono", "data-col": "seq" }, String(r.seq)),
      h("span", { class: "ahp-c-time ahp-mono", "data-col": "time", title: r.time != null ? new Date(r.time * 1000).toISOString() : null }, fmtTime(r.time)),
      h("span", { class: "ahp-c-channel ahp-mono", "data-col": "channel", title: r.channel }, shortChannel(r.channelLabel || r.channel)),
      h("span", { class: "ahp-c-action ahp-mono", "data-col": "action", "data-channel-kind": r.channelKind, title: r.type }, r.type),
      h("span", { class: "ahp-c-origin", "data-col": "origin", title: r.origin }, r.origin),
      h("span", { class: "ahp-c-result", "data-col": "result", title: r.reason || "accepted" }, r.rejected ? `✗ ${r.reason || "rejected"}` : "✓"),
    );
    row.style.top = `${r.i * ROW_H}px`;
    return row;
  }

  function drawRows() {
    spacer.style.height = `${total * ROW_H}px`;
    const [a, b] = visibleRange();
    const lo = Math.max(0, a - 5);
    const hi = Math.min(total, b + 5);
    const next = new Map();
    for (let i = lo; i < hi; i++) {
      const r = cache.get(i);
      if (!r) continue;
      const old = rowEls.get(i);
      if (old && old.dataset.seq === String(r.seq) && old.dataset.state === rowState(r)) next.set(i, old);
      else next.set(i, rowEl(r));
    }
    for (const [i, node] of rowEls) if (next.get(i) !== node) node.remove();
    const fresh = [];
    for (const [i, node] of next) if (!node.parentNode) { scroller.appendChild(node); fresh.push(node); }
    rowEls = next;
    if (fresh.length) measureColumns(fresh);
    count.textContent = ` ${total}`;
    ensureRows();
  }
  const redraw = rafThrottle(drawRows);

  function scrollToEnd() {
    // grow the spacer first: scrollTop is clamped to the current scrollHeight, and the redraw that
    // would grow it is throttled to the next frame (the newest rows stayed below the fold)
    spacer.style.height = `${total * ROW_H}px`;
    scroller.scrollTop = Math.max(0, total * ROW_H - scroller.clientHeight);
  }

  scroller.addEventListener("scroll", () => {
    const atEnd = scroller.scrollTop + scroller.clientHeight >= total * ROW_H - ROW_H;
    if (!atEnd && follow.checked && document.activeElement === scroller) follow.checked = false;
    redraw();
  });
  scroller.addEventListener("keydown", (e) => {
    const sel = e.shiftKey && model.get("range_seq") != null ? model.get("range_seq") : model.get("selected_seq");
    const rows = [...cache.values()].sort((x, y) => x.i - y.i);
    let idx = rows.findIndex((r) => r.seq === sel);
    if (e.key === "ArrowDown") idx = Math.min(total - 1, idx + 1);
    else if (e.key === "ArrowUp") idx = Math.max(0, idx - 1);
    else if (e.key === "End") { follow.checked = true; scrollToEnd(); return; }
    else return;
    e.preventDefault();
    const r = cache.get(idx) || rows[idx];
    if (r) {
      selectSeq(r.seq, e.shiftKey);
      const top = r.i * ROW_H;
      if (top < scroller.scrollTop) scroller.scrollTop = top;
      else if (top + ROW_H > scroller.scrollTop + scroller.clientHeight) scroller.scrollTop = top + ROW_H - scroller.clientHeight;
    }
  });

  function onMsg(msg) {
    if (!msg || typeof msg !== "object") return;
    if (msg.type === "rows") {
      inflight.delete(msg.req);
      if (msg.version !== version) return;
      total = msg.total;
      for (const r of msg.rows) cache.set(r.i, r);
      drawRows();
      if (follow.checked) scrollToEnd();
    } else if (msg.type === "revealed") {
      if (msg.version !== version || msg.index == null) return;
      spacer.style.height = `${total * ROW_H}px`;
      scroller.scrollTop = Math.max(0, msg.index * ROW_H - Math.floor(scroller.clientHeight / 2));
      redraw();
    } else if (msg.type === "appended") {
      if (msg.version !== version) return;
      total = msg.total;
      for (const r of msg.rows) cache.set(r.i, r);
      if (follow.checked) scrollToEnd();
      redraw();
    }
  }
  model.on("msg:custom", onMsg);

  function onVersion() {
    version = model.get("version");
    cache = new Map();
    inflight = new Set();
    total = model.get("total") || 0;
    for (const [, node] of rowEls) node.remove();
    rowEls = new Map();
    redraw();
    if (follow.checked) requestAnimationFrame(scrollToEnd);
  }
  function onTotal() {
    total = model.get("total") || 0;
    redraw();
  }
  model.on("change:version", onVersion);
  model.on("change:total", onTotal);

  function drawDetail() {
    const d = model.get("detail") || {};
    travel.checked = !!model.get("time_travel");
    travel.disabled = model.get("selected_seq") == null;
    if (d.missing != null) { detail.replaceChildren(h("div", { class: "ahp-empty" }, `seq ${d.missing} is not in the log`)); return; }
    if (d.seq == null) { detail.replaceChildren(h("div", { class: "ahp-empty" }, "Select a transition to see its action and diff.")); return; }
    const ops = (d.diff && d.diff.ops) || [];
    setChildren(detail,
      h("div", { class: "ahp-detail-head", "data-seq": d.seq },
        h("strong", null, `#${d.seq} ${d.type}`), " ",
        h("span", { class: "ahp-dim" }, `${d.origin} · ${d.channel} · ${fmtTime(d.time)}${d.reducerUs != null ? ` · reducer ${d.reducerUs} µs` : ""}`)),
      d.rejected ? h("div", { class: "ahp-err-text ahp-rejected-reason", role: "note" }, `Rejected: ${d.reason}`) : null,
      h("div", { class: "ahp-label" }, "action"),
      textBlock(d.action, model, { cls: "ahp-json" }),
      h("div", { class: "ahp-label" }, `diff (${d.diff ? d.diff.total : 0} change${d.diff && d.diff.total === 1 ? "" : "s"})`),
      d.diffError ? h("div", { class: "ahp-err-text" }, d.diffError) : null,
      ops.length ? h("ul", { class: "ahp-diff" }, ops.map((o) => h("li", { class: `ahp-op ahp-op-${o.op}`, "data-op": o.op },
        h("span", { class: "ahp-op-sym" }, { add: "+", remove: "−", replace: "~", move: "→", copy: "c", test: "?" }[o.op] || o.op),
        h("span", { class: "ahp-mono ahp-op-path", title: o.path || "/" }, o.path ? pathNodes(o.path) : "/"),
        o.from ? h("span", { class: "ahp-dim" }, ` from ${o.from}`) : null,
        o.value !== undefined ? h("span", { class: "ahp-mono ahp-op-value" }, ` ${o.value}`) : null))) : h("div", { class: "ahp-dim" }, d.rejected ? "state unchanged (rejected)" : "no change"),
      d.diff && d.diff.omitted ? h("div", { class: "ahp-dim" }, `${d.diff.omitted} more operations not shown`) : null,
      lane.linksFor(d),
    );
  }
  const onSelected = () => { redrawSelection(); drawDetail(); };

  // export the selected range as an upstream reducer fixture, or a pytest file replaying it
  const exportRange = h("span", { class: "ahp-export-range" });
  const exportDesc = h("input", { class: "ahp-input ahp-export-desc", type: "text", maxlength: 300, placeholder: "description (optional)", "aria-label": "Description of the exported fixture" });
  const exportBtn = (fmt, label) => h("button", {
    class: "ahp-btn ahp-btn-small", type: "button", "data-export": fmt, "aria-label": `Export the selected range as ${label}`,
    onclick: () => model.send({ type: "export", format: fmt, description: exportDesc.value }),
  }, `Export as ${label}`);
  const exportFixture = exportBtn("fixture", "fixture");
  const exportPytest = exportBtn("pytest", "pytest file");
  const exportResult = h("div", { class: "ahp-export-result", role: "status" });
  const exportBar = h("div", { class: "ahp-export", hidden: true },
    h("div", { class: "ahp-row-flex" }, exportRange, exportDesc, exportFixture, exportPytest), exportResult);
  root.insertBefore(exportBar, body);
  function drawExport() {
    exportBar.hidden = !model.get("can_export");
    const r = model.get("export_range") || {};
    const none = r.first == null;
    exportFixture.disabled = none || r.actions === 0;
    exportPytest.disabled = none || r.actions === 0;
    exportRange.textContent = none ? "Select a transition, shift+click another: export that range as a test"
      : `seq ${r.first}${r.last !== r.first ? `–${r.last}` : ""} of ${r.channelLabel || r.channel}: ${r.actions == null ? "many" : r.actions} action${r.actions === 1 ? "" : "s"}`;
    exportRange.title = r.channel || "";
    const res = model.get("export_result") || {};
    exportResult.replaceChildren();
    exportResult.className = `ahp-export-result ${res.ok === false ? "ahp-err-text" : "ahp-dim"}`;
    if (res.ok) {
      exportResult.append(`Wrote `, h("span", { class: "ahp-mono", "data-export-path": res.path }, res.path),
        ` (${res.reducer} reducer, ${res.actions} action${res.actions === 1 ? "" : "s"}). `,
        `Run it with: ${res.command}`);
    } else if (res.ok === false) exportResult.append(res.message || "export failed");
  }
  drawExport();
  for (const k of ["can_export", "export_range", "export_result"]) model.on(`change:${k}`, drawExport);
  function redrawSelection() {
    for (const [, node] of rowEls) node.remove();
    rowEls = new Map();
    drawRows();
  }

  drawOptions();
  drawDetail();
  model.on("change:options", drawOptions);
  model.on("change:filters", drawOptions);
  model.on("change:detail", drawDetail);
  model.on("change:selected_seq", onSelected);
  model.on("change:range_seq", redrawSelection);
  model.on("change:time_travel", drawDetail);
  // anywidget drops custom messages sent before this view existed: ask for what we show
  requestAnimationFrame(() => {
    measureColumns([head]);
    drawRows();
    const n = Math.ceil((scroller.clientHeight || 300) / ROW_H) + OVERSCAN;
    if (follow.checked && total > 0) request(Math.max(0, total - n), n);
    else request(0, n);
  });
  return () => {
    off();
    lane.dispose();
    model.off("msg:custom", onMsg);
    model.off("change:version", onVersion);
    model.off("change:total", onTotal);
    model.off("change:options", drawOptions);
    model.off("change:filters", drawOptions);
    model.off("change:detail", drawDetail);
    model.off("change:selected_seq", onSelected);
    model.off("change:range_seq", redrawSelection);
    model.off("change:time_travel", drawDetail);
    for (const k of ["can_export", "export_range", "export_result"]) model.off(`change:${k}`, drawExport);
  };
}
