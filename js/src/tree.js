// Customization tree: containers, children grouped by type, load states, MCP servers.
import { badge, debounce, dispatch, frame, h, keepFocus, spinner } from "./util.js";

const TYPE_LABELS = {
  plugin: "plugin", directory: "directory", mcpServer: "MCP server", agent: "agent", skill: "skill",
  prompt: "prompt", rule: "rule", hook: "hook",
};

export function renderTree({ model, el }) {
  const { root, heading, off } = frame(model, el, "ahp-tree", "Customizations");
  const count = h("span", { class: "ahp-count" });
  heading.appendChild(count);

  const typeSelect = h("select", { class: "ahp-select", "aria-label": "Filter customizations by type" });
  const search = h("input", {
    class: "ahp-input", type: "search", placeholder: "Filter…", "aria-label": "Filter customizations by text",
    value: model.get("text_filter") || "",
  });
  // A filter keeps the view as tall as it was: the rows it hides would shrink the workbench's
  // row, and the chat beside it with them; with no filter the view takes its natural height.
  const holdHeight = () => {
    const filtered = search.value !== "" || typeSelect.value !== "";
    root.style.minHeight = filtered ? `${Math.max(root.offsetHeight, parseFloat(root.style.minHeight) || 0)}px` : "";
  };
  const sendText = debounce(() => {
    holdHeight();
    model.set("text_filter", search.value);
    model.save_changes();
  }, 200);
  search.addEventListener("input", sendText);
  typeSelect.addEventListener("change", () => {
    holdHeight();
    model.set("type_filter", typeSelect.value);
    model.save_changes();
  });
  root.appendChild(h("div", { class: "ahp-toolbar" }, typeSelect, search));
  const authBox = h("div", { class: "ahp-auth-alert", role: "alert", hidden: true });
  const body = h("div", { class: "ahp-tree-body", role: "tree", "aria-label": "Customizations" });
  root.append(authBox, body);

  const session = () => model.get("session");
  const toggle = (node) => (ev) => {
    ev.preventDefault(); // state-driven: the checkbox follows the state the host sends back
    dispatch(model, session(), { type: "session/customizationToggled", id: node.id, enabled: !node.enabled });
  };

  function checkbox(node, ro) {
    return h("input", {
      type: "checkbox",
      class: "ahp-check",
      checked: !!node.enabled,
      disabled: ro || !node.toggleable,
      "aria-label": `Enable ${node.name}`,
      "data-focus": `toggle:${node.id}`,
      onclick: toggle(node),
    });
  }

  function mcpControls(node, ro) {
    const m = node.mcp;
    const parts = [];
    const st = badge(m.label, "ahp-mcp-state", { "data-mcp-state": m.kind });
    if (m.busy) st.prepend(spinner(`${node.name} starting`));
    parts.push(st);
    if (m.canStart)
      parts.push(h("button", {
        class: "ahp-btn ahp-btn-small", type: "button", disabled: ro, "aria-label": `Start ${node.name}`,
        "data-focus": `start:${node.id}`,
        onclick: () => dispatch(model, session(), { type: "session/mcpServerStartRequested", id: node.id }),
      }, "Start"));
    if (m.canStop)
      parts.push(h("button", {
        class: "ahp-btn ahp-btn-small", type: "button", disabled: ro, "aria-label": `Stop ${node.name}`,
        "data-focus": `stop:${node.id}`,
        onclick: () => dispatch(model, session(), { type: "session/mcpServerStopRequested", id: node.id }),
      }, "Stop"));
    if (m.allowable) // a remote client's server: only the person here may let it run
      parts.push(h("button", {
        class: "ahp-btn ahp-btn-small", type: "button", disabled: ro, "aria-label": `Allow ${node.name}`,
        "data-focus": `allow:${node.id}`,
        // the configuration this card showed: one published since is refused, to be read again
        onclick: () => model.send({ type: "allow_mcp", id: node.id, shown: m.configuration }),
      }, "Allow"));
    const out = [h("span", { class: "ahp-mcp" }, parts)];
    if (m.message) out.push(h("div", { class: "ahp-load-msg ahp-err-text" }, m.message));
    if (m.auth) out.push(authPanel(node, m.auth, ro));
    return out;
  }

  function authPanel(node, auth, ro) {
    const token = h("input", {
      class: "ahp-input", type: "password", autocomplete: "off", "aria-label": `Token for ${node.name}`,
      placeholder: "access token", "data-focus": `token:${node.id}`, disabled: ro,
    });
    const go = () => {
      if (!token.value || ro) return;
      model.send({ type: "authenticate", resource: auth.resource, token: token.value });
      token.value = "";
    };
    token.addEventListener("keydown", (e) => { if (e.key === "Enter") go(); });
    return h("div", { class: "ahp-auth-panel", "data-auth-required": "true" },
      h("div", { class: "ahp-auth-title" }, `Authentication required (${auth.reason || "required"})`),
      auth.description ? h("div", null, auth.description) : null,
      h("div", { class: "ahp-mono" }, auth.resource),
      auth.scopes && auth.scopes.length ? h("div", null, `scopes: ${auth.scopes.join(" ")}`) : null,
      h("div", { class: "ahp-row-flex" }, token,
        h("button", { class: "ahp-btn", type: "button", disabled: ro, "aria-label": `Authenticate ${node.name}`, onclick: go }, "Authenticate")),
    );
  }

  function loadBadge(load) {
    if (!load) return null;
    const b = badge(load.kind, "ahp-load", { "data-load": load.kind, title: load.message || load.kind });
    if (load.busy) b.prepend(spinner("loading"));
    return b;
  }

  function leaf(node, ro) {
    return h("div", {
      class: `ahp-leaf ${node.effective ? "" : "ahp-disabled"} ${node.greyed ? "ahp-greyed" : ""}`,
      role: "treeitem",
      "data-id": node.id, "data-type": node.type, "data-effective": node.effective ? "true" : "false",
    },
      h("div", { class: "ahp-row-flex" },
        checkbox(node, ro),
        h("span", { class: "ahp-name" }, node.name),
        node.unknownType ? badge(node.type, "ahp-type") : null,
        node.model ? badge(node.model, "ahp-type") : null,
        node.mcp ? mcpControls(node, ro) : null,
      ),
      node.description ? h("div", { class: "ahp-desc" }, node.description) : null,
    );
  }

  function container(node, ro) {
    const groups = (node.groups || []).map((g) =>
      h("div", { class: "ahp-group", role: "group", "data-group": g.type, "aria-label": g.label },
        h("div", { class: "ahp-group-title" }, `${g.label} (${g.children.length})`),
        g.children.map((c) => leaf(c, ro)),
      ));
    return h("div", {
      class: `ahp-container ${node.effective ? "" : "ahp-disabled"}`, role: "treeitem",
      "aria-expanded": "true",
      "data-id": node.id, "data-type": node.type, "data-effective": node.effective ? "true" : "false",
    },
      h("div", { class: "ahp-row-flex ahp-container-head" },
        checkbox(node, ro),
        badge(TYPE_LABELS[node.type] || node.type, "ahp-type", { "data-type": node.type }),
        h("span", { class: "ahp-name ahp-strong" }, node.name),
        node.version ? h("span", { class: "ahp-dim" }, `v${node.version}`) : null,
        node.clientId ? badge(`from client ${node.clientId}`, "ahp-client", { "data-client-id": node.clientId }) : null,
        node.type === "directory" && node.contents ? h("span", { class: "ahp-dim" }, `${node.contents}${node.writable ? ", writable" : ""}`) : null,
        loadBadge(node.load),
        node.mcp ? mcpControls(node, ro) : null,
      ),
      node.load && node.load.message ? h("div", { class: `ahp-load-msg ${node.load.kind === "error" ? "ahp-err-text" : "ahp-warn-text"}` }, node.load.message) : null,
      node.isContainer && !node.parsed ? h("div", { class: "ahp-dim" }, "children not parsed yet") : null,
      groups,
      node.isContainer && node.parsed && node.childCount === 0 ? h("div", { class: "ahp-dim" }, "no children") : null,
    );
  }

  let nodes = new Map(); // container key -> {sig, ro, el}
  function draw() {
    const vm = model.get("model") || {};
    const ro = !!vm.readOnly || !!model.get("read_only");
    count.textContent = vm.total ? ` ${vm.shown} shown of ${vm.total}` : "";
    // type filter options
    const current = model.get("type_filter") || "";
    const opts = [h("option", { value: "" }, "all types")].concat(
      (vm.typeCounts || []).map((t) => h("option", { value: t.type }, `${TYPE_LABELS[t.type] || t.type} (${t.count})`)));
    if (current && !(vm.typeCounts || []).some((t) => t.type === current)) opts.push(h("option", { value: current }, current));
    typeSelect.replaceChildren(...opts);
    typeSelect.value = current;
    // auth alert
    const auth = vm.authRequired || [];
    authBox.hidden = auth.length === 0;
    authBox.textContent = auth.length ? `${auth.map((a) => a.name || a.id).join(", ")} ${auth.length === 1 ? "needs" : "need"} authentication` : "";
    keepFocus(body, () => {
      // keyed: only containers whose view changed are rebuilt (a toggle in a 2,000-node tree
      // rebuilds one container, not the tree); the rest keep their elements, focus and scroll
      const next = new Map();
      const seenIds = new Map();
      const order = [];
      for (const node of vm.containers || []) {
        const n = (seenIds.get(node.id) || 0) + 1;
        seenIds.set(node.id, n);
        const key = `${node.id}\u241f${n}`;
        const sig = JSON.stringify(node);
        let c = nodes.get(key);
        if (!c || c.sig !== sig || c.ro !== ro) c = { sig, ro, el: container(node, ro) };
        next.set(key, c);
        order.push(c.el);
      }
      let msg = null;
      if (!vm.hasCustomizations) msg = h("div", { class: "ahp-empty" }, "No customizations in this session.");
      else if (!(vm.containers || []).length) msg = h("div", { class: "ahp-empty" }, "Nothing matches the filter.");
      const tail = vm.truncated ? h("div", { class: "ahp-dim" }, `${vm.truncated} more not shown`) : null;
      const want = [msg, ...order, tail].filter(Boolean);
      for (const [key, c] of nodes) if (next.get(key) !== c) c.el.remove();
      for (const child of [...body.children]) if (!want.includes(child)) child.remove();
      want.forEach((node, i) => { if (body.children[i] !== node) body.insertBefore(node, body.children[i] || null); });
      nodes = next;
    });
  }
  draw();
  model.on("change:model", draw);
  model.on("change:read_only", draw);
  return () => {
    off();
    model.off("change:model", draw);
    model.off("change:read_only", draw);
  };
}
