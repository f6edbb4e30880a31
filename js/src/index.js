// One bundle for every ahp_lab view; the widget's `_kind` traitlet picks the renderer.
import { renderChat } from "./chat.js";
import { renderInputs } from "./inputs.js";
import { renderInspector } from "./inspector.js";
import { renderModelCalls } from "./model_calls.js";
import { renderTimeline } from "./timeline.js";
import { renderTree } from "./tree.js";
import { renderWire } from "./wire.js";
import { keepReceiving } from "./resync.js";
import { h } from "./util.js";

const RENDERERS = {
  tree: renderTree,
  timeline: renderTimeline,
  inputs: renderInputs,
  inspector: renderInspector,
  chat: renderChat,
  modelcalls: renderModelCalls,
  wire: renderWire,
};

function render({ model, el }) {
  el.classList.add("ahp-root");
  const kind = model.get("_kind");
  const fn = RENDERERS[kind];
  if (!fn) {
    el.appendChild(h("div", { class: "ahp-error" }, `unknown ahp_lab view ${kind}`));
    return undefined;
  }
  let cleanup;
  try {
    cleanup = fn({ model, el });
  } catch (e) {
    el.appendChild(h("div", { class: "ahp-error", role: "alert" }, `view failed: ${e && e.message}`));
    return undefined;
  }
  // a model whose module loaded late may drop everything the kernel sends: see resync.js
  keepReceiving(model).catch(() => {});
  return cleanup;
}

export default { render };
