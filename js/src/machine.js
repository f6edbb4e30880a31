// The tool-call state machine (chat-channel §7) drawn as inline SVG from the kernel's geometry.
// Only createElementNS + textContent: no markup strings.
const NS = "http://www.w3.org/2000/svg";

function s(tag, attrs, text) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = String(text);
  return el;
}

let uid = 0;

export function renderMachine(m) {
  const id = `ahp-sm-${++uid}`;
  const svg = s("svg", {
    class: "ahp-machine", viewBox: `0 0 ${m.width} ${m.height}`, role: "img",
    "aria-label": `Tool-call state machine${m.current ? `, current state ${m.current}` : ""}`,
    "data-current": m.current || "",
  });
  const defs = s("defs");
  for (const [suffix, cls] of [["", "ahp-arrow"], ["-taken", "ahp-arrow-taken"]]) {
    const marker = s("marker", {
      id: `${id}${suffix}`, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 8, markerHeight: 8, markerUnits: "userSpaceOnUse", orient: "auto-start-reverse",
    });
    marker.appendChild(s("path", { d: "M0,0 L10,5 L0,10 z", class: cls }));
    defs.appendChild(marker);
  }
  svg.appendChild(defs);
  const edges = s("g", { class: "ahp-sm-edges" });
  const labels = s("g", { class: "ahp-sm-labels" });
  const ordered = [...m.edges].sort((a, b) => (a.taken === b.taken ? 0 : a.taken ? 1 : -1));
  for (const e of ordered) {
    const g = s("g", { class: `ahp-sm-edge ${e.taken ? "taken" : ""} ${e.kind}`, "data-edge": e.id, "data-taken": e.taken ? "true" : "false" });
    const title = s("title", {}, `${e.from} → ${e.to}${e.label ? `: ${e.label}` : ""}${e.seqs && e.seqs.length ? ` (seq ${e.seqs.join(", ")})` : ""}`);
    g.appendChild(title);
    g.appendChild(s("path", { d: e.d, class: "ahp-sm-path", "marker-end": `url(#${id}${e.taken ? "-taken" : ""})`, fill: "none" }));
    edges.appendChild(g);
    if (e.text && e.taken) {
      // only the path this call took is labelled (with the actions that took it), where the
      // kernel laid the label out (ahp_lab/widgets/statemachine.py); every edge names its
      // transition rule in its tooltip
      const t = s("text", {
        x: e.lx, y: e.ly, class: `ahp-sm-label taken ${e.legend ? "legend" : ""}`, "text-anchor": e.anchor || "middle", "data-edge": e.id,
      }, e.text);
      t.appendChild(s("title", {}, `${e.from} → ${e.to}: ${e.label}`));
      labels.appendChild(t);
    }
  }
  svg.appendChild(edges);
  const nodes = s("g", { class: "ahp-sm-nodes" });
  for (const n of m.nodes) {
    const cls = `ahp-sm-node ${n.current ? "current" : ""} ${n.visited ? "visited" : ""}`;
    const g = s("g", { class: cls, "data-node": n.id, "data-current": n.current ? "true" : "false" });
    if (n.pseudo) {
      const r = n.w / 2;
      if (n.id === "[*]") g.appendChild(s("circle", { cx: n.x, cy: n.y, r, class: "ahp-sm-pseudo" }));
      else {
        g.appendChild(s("circle", { cx: n.x, cy: n.y, r, class: "ahp-sm-pseudo-ring" }));
        g.appendChild(s("circle", { cx: n.x, cy: n.y, r: r - 3.5, class: "ahp-sm-pseudo" }));
      }
      g.appendChild(s("title", {}, n.id === "[*]" ? "start" : "end"));
    } else {
      g.appendChild(s("rect", { x: n.x - n.w / 2, y: n.y - n.h / 2, width: n.w, height: n.h, rx: 8, class: "ahp-sm-box" }));
      g.appendChild(s("text", { x: n.x, y: n.y + 4, "text-anchor": "middle", class: "ahp-sm-text" }, n.label));
    }
    nodes.appendChild(g);
  }
  svg.appendChild(labels);
  svg.appendChild(nodes);
  return svg;
}
