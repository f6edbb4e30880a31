// Validation of a tool input against the tool's JSON Schema, in the browser, before it is sent.
//
// `validate(value, schema)` checks the subset of JSON Schema that tool definitions use: type
// (one or several), enum, const, required, properties, additionalProperties, items / prefixItems,
// min/max (length, items, properties, value, exclusive), multipleOf, uniqueItems, allOf / anyOf /
// oneOf, and local $ref (`#/$defs/...`, `#/definitions/...`). `pattern` and `format` are shown as
// hints, not enforced: a hostile pattern could hang the page, and the tool checks its input again.
// Other keywords (patternProperties, not, if/then/else, ...) are not checked either: the view never
// blocks an input the schema may allow.
// No DOM here: tests/widgets/test_schema_validation.py runs it in node against `jsonschema`.

export const MAX_DEPTH = 12; // of schemas and values: deeper is reported, never walked
export const MAX_ENUM = 200;

// --- schema helpers ---------------------------------------------------------------------------
export function isObj(v) {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** Follow a local `$ref` (at most a few hops); `null` when it points nowhere. */
export function resolve(schema, root) {
  let s = schema;
  for (let hops = 0; isObj(s) && typeof s.$ref === "string" && hops < 8; hops++) {
    const m = /^#\/(\$defs|definitions)\/(.+)$/.exec(s.$ref);
    const defs = m && isObj(root) ? root[m[1]] : null;
    const name = m ? m[2].replace(/~1/g, "/").replace(/~0/g, "~") : null;
    const next = isObj(defs) && Object.prototype.hasOwnProperty.call(defs, name) ? defs[name] : null;
    if (!isObj(next)) return null;
    const { $ref, ...rest } = s;
    s = Object.keys(rest).length ? { ...next, ...rest } : next;
  }
  return isObj(s) ? s : s === true ? {} : null;
}

/** `Optional[X]` as JSON Schema (`anyOf: [X, {type: "null"}]`): X and whether null is allowed. */
export function unwrapNullable(schema, root) {
  const s = resolve(schema, root);
  if (!s) return { s: null, nullable: false };
  const alts = Array.isArray(s.anyOf) ? s.anyOf : Array.isArray(s.oneOf) ? s.oneOf : null;
  if (alts) {
    const isNull = (a) => { const r = resolve(a, root); return r && (r.type === "null" || r.const === null); };
    const others = alts.filter((a) => !isNull(a));
    if (others.length === 1 && others.length < alts.length) {
      const inner = resolve(others[0], root) || {};
      const { anyOf, oneOf, ...rest } = s;
      return { s: { ...inner, ...rest }, nullable: true };
    }
  }
  if (Array.isArray(s.type) && s.type.includes("null")) {
    const types = s.type.filter((t) => t !== "null");
    return { s: { ...s, type: types.length === 1 ? types[0] : types }, nullable: true };
  }
  return { s, nullable: false };
}

function typeName(v) {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v;
}

function hasType(v, t) {
  if (t === "integer") return typeof v === "number" && Number.isInteger(v);
  if (t === "number") return typeof v === "number" && Number.isFinite(v);
  if (t === "object") return isObj(v);
  if (t === "array") return Array.isArray(v);
  if (t === "null") return v === null;
  return typeof v === t;
}

export function same(a, b) {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && same(a[k], b[k]));
}

function show(v) {
  const s = JSON.stringify(v);
  return s && s.length > 40 ? `${s.slice(0, 39)}…` : String(s);
}

export function pathOf(base, key) {
  return `${base}/${String(key).replace(/~/g, "~0").replace(/\//g, "~1")}`;
}

/** Where an error is, for a person: "width", "tags[2]", "box.x", or "the input". */
export function describePath(path) {
  if (!path) return "the input";
  return path.split("/").slice(1).map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"))
    .reduce((acc, p) => (/^\d+$/.test(p) && acc ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), "");
}

// --- validation ---------------------------------------------------------------------------------
/** Errors of `value` against `schema`: `[{path, message}]` (JSON pointers; empty when valid). */
export function validate(value, schema, root = schema) {
  const errors = [];
  check(value, schema, root, "", errors, 0);
  return errors;
}

function check(v, schema, root, path, errors, depth) {
  if (schema === true || schema === undefined) return;
  if (schema === false) { errors.push({ path, message: "is not allowed" }); return; }
  if (depth > MAX_DEPTH) { errors.push({ path, message: "is nested too deeply to check" }); return; }
  const s = resolve(schema, root);
  if (!s) return; // a $ref we cannot follow: nothing to check against
  const add = (message, at = path) => errors.push({ path: at, message });
  if (s.type !== undefined) {
    const types = Array.isArray(s.type) ? s.type : [s.type];
    if (!types.some((t) => hasType(v, t))) {
      const want = types.map((t) => (t === "integer" ? "a whole number" : t === "array" ? "a list" : t === "object" ? "an object" : t === "null" ? "null" : `a ${t}`));
      add(`must be ${want.join(" or ")} (got ${typeName(v) === "integer" ? "number" : typeName(v)})`);
      return;
    }
  }
  if (Array.isArray(s.enum) && !s.enum.some((e) => same(e, v))) {
    add(`must be one of ${s.enum.slice(0, 12).map(show).join(", ")}${s.enum.length > 12 ? ", …" : ""}`);
  }
  if ("const" in s && !same(s.const, v)) add(`must be ${show(s.const)}`);
  if (typeof v === "string") {
    const n = [...v].length;
    if (typeof s.minLength === "number" && n < s.minLength) add(s.minLength === 1 ? "must not be empty" : `must be at least ${s.minLength} characters`);
    if (typeof s.maxLength === "number" && n > s.maxLength) add(`must be at most ${s.maxLength} characters`);
  }
  if (typeof v === "number") {
    const exMin = typeof s.exclusiveMinimum === "number" ? s.exclusiveMinimum : s.exclusiveMinimum === true ? s.minimum : undefined;
    const exMax = typeof s.exclusiveMaximum === "number" ? s.exclusiveMaximum : s.exclusiveMaximum === true ? s.maximum : undefined;
    if (typeof s.minimum === "number" && s.exclusiveMinimum !== true && v < s.minimum) add(`must be ≥ ${s.minimum}`);
    if (typeof s.maximum === "number" && s.exclusiveMaximum !== true && v > s.maximum) add(`must be ≤ ${s.maximum}`);
    if (typeof exMin === "number" && v <= exMin) add(`must be > ${exMin}`);
    if (typeof exMax === "number" && v >= exMax) add(`must be < ${exMax}`);
    if (typeof s.multipleOf === "number" && s.multipleOf > 0) {
      const q = v / s.multipleOf;
      if (Math.abs(q - Math.round(q)) > 1e-9) add(`must be a multiple of ${s.multipleOf}`);
    }
  }
  if (Array.isArray(v)) {
    if (typeof s.minItems === "number" && v.length < s.minItems) add(`needs at least ${s.minItems} item${s.minItems === 1 ? "" : "s"}`);
    if (typeof s.maxItems === "number" && v.length > s.maxItems) add(`takes at most ${s.maxItems} item${s.maxItems === 1 ? "" : "s"}`);
    if (s.uniqueItems === true && v.some((x, i) => v.slice(0, i).some((y) => same(x, y)))) add("must not repeat an item");
    const prefix = Array.isArray(s.prefixItems) ? s.prefixItems : Array.isArray(s.items) ? s.items : null;
    v.forEach((item, i) => {
      const sub = prefix ? (i < prefix.length ? prefix[i] : prefix === s.items ? s.additionalItems : s.items) : s.items;
      if (sub !== undefined) check(item, sub, root, pathOf(path, i), errors, depth + 1);
    });
  }
  if (isObj(v)) {
    const props = isObj(s.properties) ? s.properties : {};
    for (const k of Array.isArray(s.required) ? s.required : []) {
      if (typeof k === "string" && !Object.prototype.hasOwnProperty.call(v, k)) add("is required", pathOf(path, k));
    }
    const keys = Object.keys(v);
    if (typeof s.minProperties === "number" && keys.length < s.minProperties) add(`needs at least ${s.minProperties} field(s)`);
    if (typeof s.maxProperties === "number" && keys.length > s.maxProperties) add(`takes at most ${s.maxProperties} field(s)`);
    for (const k of keys) {
      if (Object.prototype.hasOwnProperty.call(props, k)) check(v[k], props[k], root, pathOf(path, k), errors, depth + 1);
      else if (isObj(s.patternProperties)) continue; // not checked here: never block what it may allow
      else if (s.additionalProperties === false) add("is not a field of this tool", pathOf(path, k));
      else if (isObj(s.additionalProperties)) check(v[k], s.additionalProperties, root, pathOf(path, k), errors, depth + 1);
    }
  }
  if (Array.isArray(s.allOf)) for (const sub of s.allOf) check(v, sub, root, path, errors, depth + 1);
  for (const key of ["anyOf", "oneOf"]) {
    if (!Array.isArray(s[key])) continue;
    const tries = s[key].map((sub) => { const e = []; check(v, sub, root, path, e, depth + 1); return e; });
    const matches = tries.filter((e) => e.length === 0).length;
    if (matches === 0) {
      // one alternative: its own errors say more than "matches none"
      if (tries.length === 1) errors.push(...tries[0]);
      else add(`does not match any of its ${tries.length} allowed forms`);
    } else if (key === "oneOf" && matches > 1) {
      add(`matches ${matches} of its allowed forms; it must match exactly one`);
    }
  }
}
