// Keep a rendered view's model receiving messages from the kernel.
//
// anywidget's front end (0.11) makes every message from the kernel to a model wait for the model's
// runtime (`AnyModel._handle_comm_msg` awaits `runtime.ready`), and gives that runtime 2 s from
// the model's creation to import and bind this module. On a loaded machine the deadline can pass
// (five views import the bundle at once while JupyterLab renders a Run All): `ready` then rejects
// for good, and every later update or custom message from the kernel is dropped without a word.
// The view still renders, from the state the model was created with, and never changes again: a
// timeline saying "No tool calls yet" beside a chat full of tool calls.
//
// A view that renders proves the module is loaded, so each render checks whether its model still
// receives messages. If not, the model's comm goes straight to the base WidgetModel handler (what
// anywidget's override calls once ready) and the kernel is asked to send the view again
// (`{type: "sync"}`), since what it sent meanwhile is lost.

const PROBE = { content: { data: { method: "ahp-lab-probe" } } }; // a method no handler acts on
const rewired = new WeakSet();

/** Whether `m` is the model behind anywidget's proxy: every attribute is the very same value
 * (the proxy's `get` is bound to the real model; a different model has its own layout object). */
function isModelOf(m, proxy) {
  const attrs = m && m.attributes;
  if (!attrs || typeof m.get !== "function") return false;
  let objects = 0;
  for (const k of Object.keys(attrs)) {
    const v = attrs[k];
    if (proxy.get(k) !== v) return false;
    if (v !== null && typeof v === "object") objects += 1;
  }
  return objects > 0;
}

/** The WidgetModel behind anywidget's model proxy (`null` if the widget manager hides it). */
function findModel(proxy) {
  const models = proxy.widget_manager && proxy.widget_manager._models;
  if (!models || typeof models !== "object") return Promise.resolve(null);
  const all = models instanceof Map ? [...models.values()] : Object.values(models);
  if (!all.length) return Promise.resolve(null);
  return new Promise((resolve) => {
    let left = all.length;
    for (const p of all) {
      Promise.resolve(p)
        .then((m) => { if (isModelOf(m, proxy)) resolve(m); }, () => {})
        .finally(() => { left -= 1; if (left === 0) resolve(null); });
    }
  });
}

/** Check (after a render) that the model still gets the kernel's messages; repair it if not.
 * Resolves to true when it had to repair (and asked the kernel for the whole view again). */
export async function keepReceiving(proxy) {
  let model = null;
  try {
    model = await findModel(proxy);
  } catch (e) {
    model = null;
  }
  if (!model || rewired.has(model)) return false;
  const own = Object.getPrototypeOf(model);
  const comm = model.comm;
  if (!comm || typeof comm.on_msg !== "function" || !Object.prototype.hasOwnProperty.call(own, "_handle_comm_msg")) {
    return false; // no override that could hold messages back
  }
  try {
    await own._handle_comm_msg.call(model, PROBE);
    return false; // messages get through
  } catch (e) {
    // the runtime missed its deadline: every message from the kernel is dropped
  }
  const base = Object.getPrototypeOf(own)._handle_comm_msg;
  if (typeof base !== "function" || base === own._handle_comm_msg) return false;
  rewired.add(model);
  comm.on_msg(base.bind(model));
  console.warn("[ahp_lab] this view's model stopped receiving kernel messages (anywidget's load deadline passed); reconnected it and asked for the view again");
  proxy.send({ type: "sync" });
  return true;
}
