// Raw wire view: the JSON-RPC frames of a connection (direction, kind, method, size, time), filterable;
// the selected frame's JSON below. Large frames are cut in the list (the kernel sends a preview).
import { debounce, fmtSize, fmtTime, frame, h, setChildren, textBlock } from "./util.js";

const ARROW = { in: "←", out: "→" };

export function renderWire({ model, el }) {
  const { root, heading, off } = frame(model, el, "ahp-wire", model.get("title") || "Wire");
  const count = h("span", { class: "ahp-count" });
  heading.appendChild(count);

  const dir = h("select", { class: "ahp-select", "aria-label": "Filter by direction", "data-focus": "direction" },
    h("option", { value: "" }, "both directions"), h("option", { value: "out" }, "→ sent"), h("option", { value: "in" }, "← received"));
  // a filter changed: back to the newest page of what it matches
  dir.addEventListener("change", () => { model.set("direction", dir.value); model.set("before", null); model.save_changes(); });
  const text = h("input", {
    class: "ahp-input", type: "search", placeholder: "method, kind or id", "aria-label": "Filter frames", "data-focus": "text",
  });
  const saveText = debounce(() => { model.set("text_filter", text.value); model.set("before", null); model.save_changes(); }, 200);
  text.addEventListener("input", saveText);
  const conn = h("select", { class: "ahp-select", "aria-label": "Filter by connection", "data-focus": "connection" });
  conn.addEventListener("change", () => {
    model.set("connection", conn.value === "" ? null : Number(conn.value));
    model.set("before", null);
    model.save_changes();
  });
  const page = (before) => () => { model.set("before", before()); model.save_changes(); };
  const older = h("button", { class: "ahp-btn", type: "button", title: "The frames before these" }, "◀ Older");
  const newer = h("button", { class: "ahp-btn", type: "button", title: "The frames after these" }, "Newer ▶");
  const newest = h("button", { class: "ahp-btn", type: "button", title: "The newest frames, following new ones" }, "Newest");
  older.addEventListener("click", page(() => (model.get("model") || {}).older ?? null));
  newer.addEventListener("click", page(() => (model.get("model") || {}).newer ?? null));
  newest.addEventListener("click", page(() => null));
  root.appendChild(h("div", { class: "ahp-toolbar" }, dir, text, conn, older, newer, newest));

  const head = h("div", { class: "ahp-wrow ahp-thead", role: "row" },
    ["#", "time", "", "kind", "method", "id", "size", "frame"].map((c) => h("span", { role: "columnheader" }, c)));
  const rows = h("div", { class: "ahp-wrows", role: "rowgroup", "aria-label": "Frames" });
  const table = h("div", { class: "ahp-wtable", role: "table", "aria-label": "Frames" }, head, rows);
  const detail = h("div", { class: "ahp-wdetail", "aria-live": "polite" });
  root.append(table, detail);

  function rowEl(r, selected) {
    return h("div", {
      class: `ahp-wrow ${r.error || r.kind === "error" ? "ahp-rejected" : ""} ${selected ? "ahp-selected" : ""}`,
      role: "row", tabindex: "-1", "data-n": r.n, "data-direction": r.direction, "aria-selected": selected ? "true" : "false",
      onclick: () => { model.set("selected", r.n); model.save_changes(); },
    },
      h("span", { class: "ahp-mono ahp-dim" }, String(r.n)),
      h("span", { class: "ahp-mono" }, fmtTime(r.time)),
      h("span", { class: "ahp-wdir", title: r.direction === "in" ? "received" : "sent" }, ARROW[r.direction] || "?"),
      h("span", null, r.kind),
      h("span", { class: "ahp-mono" }, r.method || ""),
      h("span", { class: "ahp-mono" }, r.id == null ? "" : String(r.id)),
      h("span", { class: "ahp-mono ahp-dim" }, fmtSize(r.size)),
      h("span", { class: "ahp-mono ahp-wpreview", title: r.truncated ? "cut: select the frame to see all of it" : "" },
        r.preview + (r.truncated ? " …" : "")),
    );
  }

  let shownPage = null;

  function draw() {
    const m = model.get("model") || {};
    const sel = model.get("selected");
    const matched = m.matched ?? 0, total = m.total ?? 0;
    const whole = (m.rows || []).length === matched;
    // which frames these rows are: a page of the matched ones when they do not all fit
    count.textContent = whole ? ` ${matched} of ${total}`
      : ` ${m.first}–${m.last} of ${matched}${matched < total ? ` matched (${total} in all)` : ""}`;
    older.disabled = m.older == null;
    newer.disabled = m.newest !== false;
    newest.disabled = m.newest !== false;
    dir.value = model.get("direction") || "";
    if (document.activeElement !== text) text.value = model.get("text_filter") || "";
    const conns = m.connections || [];
    const current = model.get("connection");
    conn.replaceChildren(h("option", { value: "" }, "all connections"), ...conns.map((c) => h("option", { value: String(c) }, `connection ${c}`)));
    conn.value = current == null ? "" : String(current);
    // the newest page follows new frames while scrolled to its end; another page opens at its top
    const page = `${m.newest}:${m.first}`;
    const atEnd = rows.scrollTop + rows.clientHeight >= rows.scrollHeight - 4;
    const list = m.rows || [];
    setChildren(rows, list.length ? list.map((r) => rowEl(r, r.n === sel)) : h("div", { class: "ahp-empty" }, "No frames yet."));
    if (page !== shownPage && !m.newest) rows.scrollTop = 0;
    else if (m.newest && (atEnd || page !== shownPage)) {
      rows.scrollTop = rows.scrollHeight;
      // the first draw may come before the view is laid out: its end once it is
      if (shownPage === null) requestAnimationFrame(() => { rows.scrollTop = rows.scrollHeight; });
    }
    shownPage = page;
    const d = m.detail;
    if (!d) setChildren(detail, h("div", { class: "ahp-empty" }, "Select a frame to see its JSON."));
    else if (d.missing != null) setChildren(detail, h("div", { class: "ahp-empty" }, `frame ${d.missing} is no longer in the log`));
    else setChildren(detail,
      h("div", { class: "ahp-detail-head", "data-n": d.n },
        h("strong", null, `#${d.n} ${ARROW[d.direction] || ""} ${d.method || d.kind}`), " ",
        h("span", { class: "ahp-dim" }, `${d.kind}${d.id != null ? ` · id ${d.id}` : ""} · ${fmtSize(d.size)} · ${fmtTime(d.time)} · connection ${d.connection}`)),
      d.error ? h("div", { class: "ahp-err-text" }, d.error) : null,
      textBlock(d.json, model, { cls: "ahp-json" }));
  }

  draw();
  model.on("change:model", draw);
  model.on("change:selected", draw);
  return () => {
    off();
    saveText.cancel();
    model.off("change:model", draw);
    model.off("change:selected", draw);
  };
}
