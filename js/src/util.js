// Shared DOM helpers. Peer text only ever reaches the DOM through textContent, or through
// marked -> DOMPurify (with the URL hook below) for markdown.
import DOMPurify from "dompurify";
import { Marked } from "marked";

// --- text -------------------------------------------------------------------------------------
// ANSI CSI/OSC/other escapes and C0/C1 controls except \n and \t (defence in depth: the kernel
// already cleaned every string it sent).
const ESC_RE =
  /\x1b\[[0-?]*[ -/]*[@-~]?|\x9b[0-?]*[ -/]*[@-~]?|\x1b\][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?|\x1b[PX^_][^\x1b\x9c]*(?:\x1b\\|\x9c)?|\x1b[ -~]?/g;
const CTRL_RE = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g;
export function cleanText(s) {
  if (s === null || s === undefined) return "";
  s = String(s);
  if (s.length > 4_200_000) s = s.slice(0, 4_200_000);
  return s.replace(ESC_RE, "").replace(/\r\n?/g, "\n").replace(CTRL_RE, "");
}

// --- URLs -------------------------------------------------------------------------------------
export function safeUrl(url) {
  if (typeof url !== "string") return null;
  const squashed = url.replace(/[\x00-\x20\x7f-\x9f]/g, "");
  const m = /^([a-zA-Z][a-zA-Z0-9+.\-]*):/.exec(squashed);
  if (!m) return squashed.startsWith("#") ? squashed : null;
  const scheme = m[1].toLowerCase();
  return scheme === "http" || scheme === "https" || scheme === "mailto" ? url.trim() : null;
}

const URL_ATTRS = ["href", "src", "xlink:href", "action", "formaction", "background", "poster", "cite", "srcset"];
DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  for (const attr of URL_ATTRS) {
    if (node.hasAttribute && node.hasAttribute(attr)) {
      const ok = attr === "href" ? safeUrl(node.getAttribute(attr)) : null;
      if (ok === null) node.removeAttribute(attr);
    }
  }
  if (node.tagName === "A") {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer nofollow");
  }
});

const PURIFY = {
  USE_PROFILES: { html: true },
  FORBID_TAGS: [
    "style", "img", "picture", "source", "video", "audio", "iframe", "object", "embed", "form", "input",
    "button", "textarea", "select", "option", "link", "meta", "base", "svg", "math", "template", "dialog",
  ],
  FORBID_ATTR: ["style", "srcset", "action", "formaction", "ping", "id", "name", "tabindex", "autofocus"],
  ALLOW_DATA_ATTR: false,
  RETURN_DOM_FRAGMENT: true,
};

const marked = new Marked({ gfm: true, breaks: false, async: false });
marked.use({
  renderer: {
    // images never load (no remote fetches, no exfiltration through image URLs): show the alt text
    image({ text, href }) {
      const alt = escapeHtml(text || "image");
      const where = safeUrl(href) ? ` (${escapeHtml(href)})` : "";
      return `<span class="ahp-img-blocked">[image: ${alt}]${where}</span>`;
    },
    html({ text }) {
      // raw HTML in markdown is shown as text, never interpreted
      return escapeHtml(text);
    },
  },
});

export function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

/** Markdown -> sanitized DocumentFragment. */
export function renderMarkdown(text) {
  let html;
  try {
    html = marked.parse(cleanText(text));
  } catch (e) {
    html = escapeHtml(cleanText(text));
  }
  return DOMPurify.sanitize(html, PURIFY);
}

// --- DOM builder ------------------------------------------------------------------------------
/** h("div", {class: "x", onclick: fn, "aria-label": "..."}, "text", child, [children]) */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
      else if (k === "class") el.className = v;
      else if (k === "text") el.textContent = cleanText(v);
      else if (k === "dataset") for (const [dk, dv] of Object.entries(v)) { if (dv !== null && dv !== undefined) el.dataset[dk] = String(dv); }
      else if (k === "checked" || k === "disabled" || k === "value" || k === "selected" || k === "indeterminate") el[k] = v;
      else el.setAttribute(k, v === true ? "" : String(v));
    }
  }
  appendAll(el, children);
  return el;
}
function appendAll(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) appendAll(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(cleanText(c)));
  }
}

/** replaceChildren that skips null/false and flattens arrays (the DOM call would print "null"). */
export function setChildren(el, ...kids) {
  el.replaceChildren();
  appendAll(el, kids);
  return el;
}

export function spinner(label) {
  return h("span", { class: "ahp-spinner", role: "progressbar", "aria-label": label || "in progress" });
}

export function badge(text, cls, attrs) {
  return h("span", { class: `ahp-badge ${cls || ""}`, ...(attrs || {}) }, text);
}

export const BUSY = new Set(["streaming", "running", "starting", "loading"]);
/** A tool call's status badge; `call` (a tool-call view) makes a failed completion read "failed". */
export function statusBadge(status, call) {
  const failed = !!(call && call.failed);
  const b = badge(failed ? call.statusLabel || "failed" : status, "ahp-status", { "data-state": failed ? "failed" : status });
  if (BUSY.has(status)) b.prepend(spinner(status));
  return b;
}

/** A capped text block from the kernel (`{text, length, truncated, ref, markdown}`). */
export function textBlock(block, model, opts = {}) {
  const wrap = h("div", { class: `ahp-block ${opts.cls || ""}` });
  if (!block || typeof block !== "object") return wrap;
  const md = opts.markdown ?? block.markdown;
  if (md) {
    const div = h("div", { class: "ahp-md" });
    div.appendChild(renderMarkdown(block.text || ""));
    wrap.appendChild(div);
  } else {
    wrap.appendChild(h("pre", { class: "ahp-pre" }, block.text || ""));
  }
  if (block.truncated) {
    wrap.appendChild(
      h("div", { class: "ahp-more" },
        h("span", null, `showing ${fmtSize(block.text.length)} of ${fmtSize(block.length)} `),
        h("button", {
          class: "ahp-btn ahp-btn-small",
          type: "button",
          "aria-label": "Show more",
          onclick: () => model.send({ type: "more", ref: block.ref }),
        }, "show more"),
      ),
    );
  }
  return wrap;
}

export function fmtSize(n) {
  if (typeof n !== "number") return "?";
  if (n < 1024) return `${n} chars`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} K`;
  return `${(n / 1024 / 1024).toFixed(1)} M`;
}

export function fmtTime(t) {
  if (typeof t !== "number") return "";
  const d = new Date(t * 1000);
  const p = (x, n = 2) => String(x).padStart(n, "0");
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

/** Re-render `container` with `fn` keeping keyboard focus on the element with the same data-focus key. */
export function keepFocus(container, fn) {
  const active = document.activeElement;
  const key = active && container.contains(active) ? active.getAttribute("data-focus") : null;
  const scroll = container.scrollTop;
  fn();
  container.scrollTop = scroll;
  // What was just rebuilt may count for less than its height until it is painted (the tree's
  // containers have content-visibility: auto), which clamped the scroll to the top: a toggle or a
  // Start/Stop at the bottom of the list scrolled the row out of view. Set again once painted.
  if (container.scrollTop < scroll) {
    let tries = 3;
    const again = () => {
      container.scrollTop = scroll;
      if (container.scrollTop < scroll && --tries > 0) requestAnimationFrame(again);
    };
    requestAnimationFrame(again);
  }
  if (key) {
    const again = container.querySelector(`[data-focus="${CSS.escape(key)}"]`);
    if (again) again.focus({ preventScroll: true });
  }
}

const MODE_BADGES = {
  replay: ["replay: read-only", "A replayed log: nothing here dispatches"],
  closed: ["closed", "This lab was closed (aclose()): nothing here dispatches"],
};

/** The frame every view shares: heading (with a "replay: read-only" / "closed" badge), a
 * time-travel banner, a one-line error. */
export function frame(model, el, cls, title) {
  const root = h("div", { class: `ahp-view ${cls}`, "data-kind": model.get("_kind") });
  const modeBadge = h("span", { class: "ahp-badge ahp-mode", role: "status", hidden: true });
  const heading = h("div", { class: "ahp-head" }, h("h3", { class: "ahp-title" }, title), modeBadge);
  const banner = h("div", { class: "ahp-readonly", role: "status", hidden: true });
  const error = h("div", { class: "ahp-error", role: "alert", hidden: true });
  root.append(heading, banner, error);
  el.appendChild(root);
  const sync = () => {
    const ro = model.get("read_only");
    const mode = model.get("mode") || "live";
    root.classList.toggle("ahp-is-readonly", !!ro);
    root.dataset.readOnly = ro ? "true" : "false";
    root.dataset.mode = mode;
    const mb = MODE_BADGES[mode];
    modeBadge.hidden = !mb;
    modeBadge.textContent = mb ? mb[0] : "";
    modeBadge.title = mb ? mb[1] : "";
    modeBadge.dataset.mode = mode;
    // time travel: every view but the inspector (the control itself) says where it stands
    const at = model.get("at_seq");
    const travelling = ro && at !== null && at !== undefined;
    banner.hidden = !travelling;
    banner.textContent = travelling ? `Viewing the state at seq ${at} (read-only)` : "";
    const err = model.get("error");
    error.hidden = !err;
    error.replaceChildren();
    if (err) {
      error.append(
        h("span", { class: "ahp-error-text" }, err),
        h("button", {
          class: "ahp-btn ahp-btn-small", type: "button", "aria-label": "Dismiss error",
          onclick: () => { model.send({ type: "clear_error" }); },
        }, "×"),
      );
    }
  };
  sync();
  const keys = ["read_only", "mode", "at_seq", "error", "error_count"];
  for (const k of keys) model.on(`change:${k}`, sync);
  const off = () => { for (const k of keys) model.off(`change:${k}`, sync); };
  return { root, heading, off };
}

export function dispatch(model, channel, action) {
  if (model.get("read_only")) return;
  model.send({ type: "dispatch", channel, action });
}

/** Coalesce calls to fn into one per animation frame. */
export function rafThrottle(fn) {
  let pending = false;
  return (...args) => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      fn(...args);
    });
  };
}

export function debounce(fn, ms) {
  let t = null;
  const d = (...args) => {
    clearTimeout(t);
    t = setTimeout(() => fn(...args), ms);
  };
  d.cancel = () => clearTimeout(t);
  return d;
}
