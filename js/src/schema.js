// A tool's input as a form built from its JSON Schema (string, number, integer, boolean, enum,
// array of simple values, nested object; raw JSON for anything else), checked with validate.js.
// Every schema string reaches the DOM through textContent only.
import { h } from "./util.js";
import { MAX_DEPTH, MAX_ENUM, describePath, isObj, pathOf, resolve, same, unwrapNullable, validate } from "./validate.js";

export { describePath, validate };

const MAX_FORM_DEPTH = 3; // nested objects drawn as fieldsets; deeper ones are JSON fields

// --- the form -----------------------------------------------------------------------------------
function label(s, key) {
  return (s && typeof s.title === "string" && s.title) || key;
}

function hints(s) {
  const out = [];
  if (typeof s.description === "string" && s.description) out.push(s.description.length > 200 ? `${s.description.slice(0, 199)}…` : s.description);
  if (typeof s.minimum === "number" || typeof s.maximum === "number") out.push(`${s.minimum ?? "−∞"} to ${s.maximum ?? "∞"}`);
  if (typeof s.minLength === "number" || typeof s.maxLength === "number") out.push(`length ${s.minLength ?? 0}–${s.maxLength ?? "∞"}`);
  if (typeof s.format === "string") out.push(`format: ${s.format}`);
  if (typeof s.pattern === "string") out.push(`pattern: ${s.pattern.length > 60 ? `${s.pattern.slice(0, 59)}…` : s.pattern}`);
  return out.join(" · ");
}

const SIMPLE = new Set(["string", "number", "integer", "boolean"]);

function kindOf(s, depth) {
  if (!s) return "json";
  if (Array.isArray(s.enum) && s.enum.length && s.enum.length <= MAX_ENUM && s.enum.every((e) => e === null || typeof e !== "object")) return "enum";
  const t = Array.isArray(s.type) ? null : s.type;
  if (SIMPLE.has(t)) return t;
  if (t === "object" && isObj(s.properties) && depth < MAX_FORM_DEPTH && !s.anyOf && !s.oneOf) return "object";
  if (t === "array" && !Array.isArray(s.items)) return "array";
  return "json";
}

function show(v) {
  const t = typeof v === "string" ? v : JSON.stringify(v);
  return t && t.length > 40 ? `${t.slice(0, 39)}…` : String(t);
}

/** An empty optional field leaves the tool's default: say which. */
function placeholder(s) {
  return s && "default" in s && s.default !== null ? `default: ${show(s.default)}` : null;
}

/** The input element for one simple value (string, number, integer, enum); `read()` gives the value
 * (or `undefined` for an empty optional), raw text when it is not a number. */
function simpleInput(kind, s, value, aria, nullable) {
  let el;
  let read;
  if (kind === "enum") {
    el = h("select", { class: "ahp-select", "aria-label": aria });
    const opts = [h("option", { value: "" }, "default" in s ? `(default: ${show(s.default)})` : nullable ? "(none)" : "(choose)")];
    s.enum.forEach((e, i) => opts.push(h("option", { value: String(i) }, e === null ? "null" : String(e))));
    el.append(...opts);
    const at = s.enum.findIndex((e) => same(e, value));
    el.value = at >= 0 ? String(at) : "";
    read = () => (el.value === "" ? (nullable && value === null ? null : undefined) : s.enum[Number(el.value)]);
  } else if (kind === "number" || kind === "integer") {
    el = h("input", { class: "ahp-input", type: "text", inputmode: kind === "integer" ? "numeric" : "decimal", "aria-label": aria, placeholder: placeholder(s) });
    el.value = typeof value === "number" ? String(value) : value === undefined || value === null ? "" : String(value);
    read = () => {
      const t = el.value.trim();
      if (t === "") return nullable && value === null ? null : undefined;
      const n = Number(t);
      return Number.isFinite(n) && /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(t) ? n : t;
    };
  } else {
    const long = typeof value === "string" && (value.includes("\n") || value.length > 80);
    el = long ? h("textarea", { class: "ahp-textarea", rows: Math.min(8, value.split("\n").length + 1), "aria-label": aria })
      : h("input", { class: "ahp-input", type: "text", "aria-label": aria, placeholder: placeholder(s) });
    el.value = typeof value === "string" ? value : value === undefined || value === null ? "" : JSON.stringify(value);
    read = () => (el.value === "" && (value === undefined || value === null) ? (value === null ? null : undefined) : el.value);
  }
  return { el, read };
}

/** One field (a property, or an array item): `{el, read, fields}`; `fields` maps JSON pointers to
 * the element that shows that pointer's error. */
function field(s0, value, path, name, required, root, depth, onChange) {
  const { s, nullable } = unwrapNullable(s0, root);
  const kind = kindOf(s, depth);
  const aria = describePath(path) || name;
  const err = h("div", { class: "ahp-field-error ahp-err-text", role: "alert", hidden: true, "data-error-for": path });
  const hint = s ? hints(s) : "";
  const fields = new Map([[path, err]]);
  let control;
  let read;
  if (kind === "boolean") {
    const box = h("input", { type: "checkbox", class: "ahp-check", "aria-label": aria });
    box.checked = value === true || (value === undefined && s.default === true);
    let touched = false;
    box.addEventListener("change", () => { touched = true; });
    control = box;
    read = () => (touched || value !== undefined || required ? box.checked : undefined);
  } else if (kind === "object") {
    const obj = isObj(value) ? value : {};
    const req = new Set(Array.isArray(s.required) ? s.required : []);
    const subs = Object.entries(s.properties).map(([k, sub]) => {
      const f = field(sub, obj[k], pathOf(path, k), k, req.has(k), root, depth + 1, onChange);
      for (const [p, e] of f.fields) fields.set(p, e);
      return { k, f };
    });
    control = h("fieldset", { class: "ahp-subform" }, subs.map((x) => x.f.el));
    read = () => {
      if (value === undefined && !required && subs.every((x) => x.f.read() === undefined)) return undefined;
      if (value === null && subs.every((x) => x.f.read() === undefined)) return null;
      const out = {};
      for (const [k, v] of Object.entries(obj)) if (!(k in s.properties)) out[k] = v; // fields the form does not show
      for (const x of subs) { const v = x.f.read(); if (v !== undefined) out[x.k] = v; }
      return out;
    };
  } else if (kind === "array") {
    const item = unwrapNullable(s.items === undefined ? true : s.items, root).s;
    const itemKind = kindOf(item, depth + 1);
    if (!(SIMPLE.has(itemKind) || itemKind === "enum") || itemKind === "boolean") {
      return jsonField();
    }
    const list = h("div", { class: "ahp-array" });
    const rows = [];
    const addRow = (v) => {
      const idx = rows.length;
      const inp = simpleInput(itemKind, item, v, `${aria}[${idx}]`, false);
      const rowErr = h("div", { class: "ahp-field-error ahp-err-text", role: "alert", hidden: true });
      const row = { inp, el: null, err: rowErr };
      const remove = h("button", { class: "ahp-btn ahp-btn-small", type: "button", "aria-label": `Remove item of ${aria}` }, "×");
      remove.addEventListener("click", () => { rows.splice(rows.indexOf(row), 1); row.el.remove(); renumber(); onChange(); });
      row.el = h("div", { class: "ahp-array-item" }, h("div", { class: "ahp-row-flex" }, inp.el, remove), rowErr);
      inp.el.addEventListener("input", onChange);
      inp.el.addEventListener("change", onChange);
      rows.push(row);
      list.appendChild(row.el);
    };
    const renumber = () => {
      for (const p of [...fields.keys()]) if (p !== path) fields.delete(p);
      rows.forEach((r, i) => { fields.set(pathOf(path, i), r.err); r.err.dataset.errorFor = pathOf(path, i); });
    };
    (Array.isArray(value) ? value : []).forEach(addRow);
    renumber();
    const addBtn = h("button", { class: "ahp-btn ahp-btn-small", type: "button", "aria-label": `Add an item to ${aria}` }, "+ add");
    addBtn.addEventListener("click", () => { addRow(undefined); renumber(); onChange(); rows[rows.length - 1].inp.el.focus(); });
    control = h("div", null, list, addBtn);
    read = () => {
      if (!rows.length && value === undefined && !required) return undefined;
      return rows.map((r) => r.inp.read()).map((v) => (v === undefined ? "" : v));
    };
  } else if (kind === "json") {
    return jsonField();
  } else {
    const inp = simpleInput(kind, s, value, aria, nullable);
    control = inp.el;
    // a required text left empty is missing, and the check says "is required" next to it: read as
    // "", it was sent and the tool ran with name="" (a first-hour user)
    read = required && kind === "string" ? () => { const v = inp.read(); return v === "" ? undefined : v; } : inp.read;
  }
  if (kind !== "object" && kind !== "array") {
    control.addEventListener("input", onChange);
    control.addEventListener("change", onChange);
  }
  return wrap(control, read);

  function jsonField() {
    const area = h("textarea", { class: "ahp-textarea", rows: 2, "aria-label": `${aria} (JSON)` });
    area.value = value === undefined ? "" : JSON.stringify(value, null, 1);
    area.addEventListener("input", onChange);
    const readJson = () => {
      const t = area.value.trim();
      if (t === "") return undefined;
      try { return JSON.parse(t); } catch (e) { return new BadJson(e); }
    };
    return wrap(area, readJson, " (JSON)");
  }

  function wrap(ctrl, rd, suffix = "") {
    const head = h("label", { class: "ahp-q-label" }, label(s, name), suffix ? h("span", { class: "ahp-dim" }, suffix) : null,
      required ? h("span", { class: "ahp-req", "aria-hidden": "true" }, " *") : null);
    const el = h("div", { class: "ahp-field", "data-field": path, "data-kind": kind }, head, ctrl,
      hint ? h("div", { class: "ahp-dim ahp-hint" }, hint) : null, err);
    return { el, read: rd, fields };
  }
}

/** A value the person typed as JSON that does not parse. */
class BadJson {
  constructor(error) {
    this.message = `not valid JSON (${String((error && error.message) || error).slice(0, 120)})`;
  }
}

/** Parse-failures inside a form value, as errors; the value with them removed is still checked. */
function badJson(v, path, errors, depth = 0) {
  if (v instanceof BadJson) { errors.push({ path, message: v.message }); return true; }
  if (depth > MAX_DEPTH || v === null || typeof v !== "object") return false;
  let bad = false;
  for (const [k, x] of Object.entries(v)) bad = badJson(x, pathOf(path, k), errors, depth + 1) || bad;
  return bad;
}

/** Whether the form can show this schema (an object with properties); otherwise raw JSON only. */
export function formable(schema) {
  const s = resolve(schema, schema);
  return !!s && s.type === "object" && isObj(s.properties) && Object.keys(s.properties).length > 0;
}

/** The form for a tool input: `{el, read(), check() -> errors, showErrors(errors)}`. */
export function schemaForm(schema, value, onChange) {
  const s = resolve(schema, schema);
  const obj = isObj(value) ? value : {};
  const req = new Set(Array.isArray(s.required) ? s.required : []);
  const fields = new Map();
  const subs = Object.entries(s.properties).map(([k, sub]) => {
    const f = field(sub, obj[k], pathOf("", k), k, req.has(k), schema, 1, onChange);
    for (const [p, e] of f.fields) fields.set(p, e);
    return { k, f };
  });
  const el = h("div", { class: "ahp-schema-form" }, subs.map((x) => x.f.el));
  const read = () => {
    const out = {};
    for (const [k, v] of Object.entries(obj)) if (!(k in s.properties)) out[k] = v;
    for (const x of subs) { const v = x.f.read(); if (v !== undefined) out[x.k] = v; }
    return out;
  };
  const check = () => {
    const v = read();
    const errors = [];
    badJson(v, "", errors);
    if (errors.length) return errors;
    // a field of the form left empty: say what to do, next to it
    return validate(v, schema).map((e) => (e.message === "is required" && fields.has(e.path) ? { ...e, message: "is required: fill it in before approving" } : e));
  };
  const showErrors = (errors, general) => {
    for (const e of fields.values()) { e.hidden = true; e.textContent = ""; }
    const rest = [];
    for (const e of errors) {
      const at = fields.get(e.path) || nearest(fields, e.path);
      if (at) {
        at.hidden = false;
        at.textContent = at.textContent ? `${at.textContent}; ${e.message}` : e.message;
      } else rest.push(e);
    }
    general(rest);
  };
  return { el, read, check, showErrors, fields };
}

function nearest(fields, path) {
  let p = path;
  while (p) {
    p = p.slice(0, p.lastIndexOf("/"));
    if (fields.has(p) && p) return fields.get(p);
  }
  return null;
}
