// Session input queue: tool confirmations, client executions, questions, authentication.
import { contentList } from "./content.js";
import { describePath, formable, schemaForm, validate } from "./schema.js";
import { badge, debounce, dispatch, frame, h, safeUrl, spinner, textBlock } from "./util.js";

function signature(entry) {
  // everything but the answers: a card is rebuilt only when its structure changes, so what a person
  // is typing (and the focus) survives the draft echoes
  return JSON.stringify(entry, (k, v) => (k === "answer" ? undefined : v));
}

export function renderInputs({ model, el }) {
  const { root, heading, off } = frame(model, el, "ahp-inputs", "Input needed");
  const count = h("span", { class: "ahp-count" });
  heading.appendChild(count);
  const list = h("div", { class: "ahp-input-list", role: "list" });
  root.appendChild(list);
  const cards = new Map(); // entry id -> {sig, el, ro}

  // "Approve with edits": the input as a form built from the tool's inputSchema (or raw JSON),
  // checked against the schema before it is sent, with each error next to its field.
  function inputEditor(e, name, onValidity) {
    const schema = e.inputSchema && typeof e.inputSchema === "object" ? e.inputSchema : null;
    const toolName = (e.toolCall || {}).toolName || "";
    let parsed;
    try { parsed = JSON.parse(e.inputText || ""); } catch (err) { parsed = undefined; }
    const canForm = !!schema && formable(schema);
    let mode = canForm && parsed !== null && typeof parsed === "object" && !Array.isArray(parsed) ? "form" : "json";
    let form = null;
    const area = h("textarea", { class: "ahp-textarea ahp-edit-json", rows: 5, "aria-label": `Edit input of ${name} as JSON` });
    area.value = e.inputText || "";
    const general = h("div", { class: "ahp-edit-errors ahp-err-text", role: "alert", hidden: true });
    const body = h("div", { class: "ahp-edit-body" });
    const formBtn = h("button", { class: "ahp-btn ahp-btn-small", type: "button", "aria-pressed": "false", "aria-label": `Edit input of ${name} as a form` }, "Form");
    const jsonBtn = h("button", { class: "ahp-btn ahp-btn-small", type: "button", "aria-pressed": "false", "aria-label": `Edit input of ${name} as raw JSON` }, "JSON");
    const last = (model.get("last_inputs") || {})[toolName];
    const lastBtn = typeof last === "string" && last !== e.inputText
      ? h("button", { class: "ahp-btn ahp-btn-small", type: "button", "aria-label": `Use my last edit of ${name}`, title: last.length > 300 ? `${last.slice(0, 299)}…` : last }, "Use my last edit")
      : null;
    const el = h("div", { class: "ahp-edit", "data-edit-mode": mode },
      h("div", { class: "ahp-row-flex ahp-edit-bar" }, canForm ? [formBtn, jsonBtn] : h("span", { class: "ahp-dim" }, schema ? "raw JSON (this schema has no form)" : "raw JSON (the tool declares no input schema)"), lastBtn),
      body, general);

    function showGeneral(errors) {
      general.hidden = !errors.length;
      general.replaceChildren(...errors.map((x) => h("div", null, `${describePath(x.path)}: ${x.message}`)));
    }
    function current() {
      // {text, errors}: the JSON to send, and what is wrong with it
      if (mode === "form") {
        const errors = form.check();
        return { text: errors.length ? null : JSON.stringify(form.read()), errors };
      }
      let v;
      try { v = JSON.parse(area.value); } catch (err) {
        return { text: null, errors: [{ path: "", message: `not valid JSON (${String(err.message).slice(0, 120)})` }] };
      }
      const errors = schema ? validate(v, schema) : [];
      return { text: errors.length ? null : area.value, errors };
    }
    function refresh() {
      const got = current();
      if (mode === "form") form.showErrors(got.errors, showGeneral);
      else showGeneral(got.errors);
      el.dataset.valid = got.errors.length ? "false" : "true";
      onValidity(!got.errors.length);
      return got;
    }
    function setMode(m, value) {
      if (m === "form") {
        form = schemaForm(schema, value, refresh);
        body.replaceChildren(form.el);
      } else {
        body.replaceChildren(area);
      }
      mode = m;
      el.dataset.editMode = m;
      formBtn.setAttribute("aria-pressed", m === "form" ? "true" : "false");
      jsonBtn.setAttribute("aria-pressed", m === "json" ? "true" : "false");
      refresh();
    }
    area.addEventListener("input", refresh);
    formBtn.addEventListener("click", () => {
      if (mode === "form") return;
      let v;
      try { v = JSON.parse(area.value); } catch (err) { showGeneral([{ path: "", message: "fix the JSON first: it does not parse" }]); return; }
      if (v === null || typeof v !== "object" || Array.isArray(v)) { showGeneral([{ path: "", message: "the form edits an object; this JSON is not one" }]); return; }
      setMode("form", v);
    });
    jsonBtn.addEventListener("click", () => {
      if (mode === "json") return;
      area.value = JSON.stringify(form.read(), null, 2);
      setMode("json");
    });
    if (lastBtn) lastBtn.addEventListener("click", () => {
      let v;
      try { v = JSON.parse(last); } catch (err) { v = undefined; }
      if (canForm && v !== null && typeof v === "object" && !Array.isArray(v)) setMode("form", v);
      else { area.value = last; setMode("json"); }
    });
    setMode(mode, parsed);
    return {
      el,
      value: () => refresh(),
      focus: () => { const first = el.querySelector("input, select, textarea"); if (first) first.focus(); },
      toolName,
    };
  }

  function confirmationCard(e, ro) {
    const name = e.displayName;
    const tc = e.toolCall || {};
    const isResult = e.phase === "result";
    let editor = null;
    const editBox = h("div", { class: "ahp-edit-box", hidden: true });
    const approveEdited = h("button", {
      class: "ahp-btn ahp-primary", type: "button", hidden: true, disabled: ro,
      "aria-label": `Approve ${name} with edited input`,
      onclick: () => {
        if (!editor || ro) return;
        const got = editor.value();
        if (got.text === null) { editor.focus(); return; } // the errors are shown next to the fields
        if (model.get("read_only")) return;
        model.send({ type: "dispatch", channel: e.approve.channel, action: { ...e.approve.action, editedToolInput: got.text }, remember: editor.toolName, shown: e.shown });
      },
    }, "Approve with edits");
    // a decision carries what this card showed: the kernel refuses an approval of a call that
    // changed since (an agent may send new input while a person reads the old one)
    const decide = (target) => {
      if (!target || model.get("read_only")) return;
      model.send({ type: "dispatch", channel: target.channel, action: target.action, shown: e.shown });
    };
    const inputView = tc.toolInput && tc.toolInput.block ? textBlock(tc.toolInput.block, model, { cls: "ahp-input-preview" })
      : tc.toolInput && tc.toolInput.ref ? h("div", { class: "ahp-mono" }, `input: ${tc.toolInput.uri}`) : null;
    // the call's own options stand for the plain buttons of their kind: "Approve" beside "Allow
    // once" and "Always allow" left a person guessing which option it picked (none)
    const options = e.options || [];
    const buttons = [];
    if (!options.some((o) => o.kind !== "deny")) {
      buttons.push(h("button", { class: "ahp-btn ahp-primary", type: "button", disabled: ro, "aria-label": `Approve ${name}`, onclick: () => decide(e.approve) }, "Approve"));
    }
    if (!options.some((o) => o.kind === "deny")) {
      buttons.push(h("button", { class: "ahp-btn ahp-danger", type: "button", disabled: ro, "aria-label": `Deny ${name}`, onclick: () => decide(e.deny) }, "Deny"));
    }
    // approving as shown: not while an edit is open, which the person may think it carries (a
    // first-hour user clicked Approve with an edit open, and the input as it was ran)
    const asShown = buttons.filter((b) => b.textContent === "Approve");
    let lastGroup = null;
    for (const o of options) {
      if (lastGroup !== null && o.group !== lastGroup) buttons.push(h("span", { class: "ahp-sep" }));
      lastGroup = o.group;
      const button = h("button", {
        class: `ahp-btn ${o.kind === "deny" ? "ahp-danger" : ""}`, type: "button", disabled: ro,
        "aria-label": `${o.label} ${name}`, "data-option-id": o.id,
        onclick: () => decide(o.action),
      }, o.label);
      if (o.kind !== "deny") asShown.push(button);
      buttons.push(button);
    }
    if (e.editable) {
      buttons.push(h("button", {
        class: "ahp-btn", type: "button", disabled: ro || e.inputTruncated, "aria-label": `Edit input of ${name} before approving`,
        title: e.inputTruncated ? "input too large to edit here" : "",
        onclick: (ev) => {
          const editing = editBox.hidden;
          if (editing) {
            editor = inputEditor(e, name, (ok) => { approveEdited.disabled = ro || !ok; });
            editBox.replaceChildren(editor.el);
          } else {
            editor = null;
            editBox.replaceChildren();
          }
          editBox.hidden = !editing;
          approveEdited.hidden = !editing;
          if (inputView) inputView.hidden = editing;
          for (const b of asShown) {
            b.disabled = ro || editing;
            b.title = editing ? "an edit is open: approve with edits, or cancel the edit first" : "";
          }
          ev.currentTarget.textContent = editing ? "Cancel edit" : "Edit input";
          ev.currentTarget.setAttribute("aria-label", editing ? `Cancel the edit of ${name}'s input` : `Edit input of ${name} before approving`);
          if (editing) editor.focus();
        },
      }, "Edit input"));
    }
    const risk = e.risk;
    return [
      h("div", { class: "ahp-card-head" },
        badge(isResult ? "confirm result" : "confirm tool", "ahp-kind"),
        h("strong", null, name),
        badge((tc.contributor || {}).label || "host", "ahp-contrib"),
        e.chatTitle ? h("span", { class: "ahp-dim" }, `in ${e.chatTitle}`) : null),
      e.title ? textBlock(e.title, model) : null,
      tc.invocationBlock ? textBlock(tc.invocationBlock, model) : null,
      risk ? h("div", { class: "ahp-risk", "data-safety": risk.safety ?? "" },
        risk.loading ? [spinner("assessing risk"), " assessing risk…"] : `risk: safety ${risk.safety != null ? risk.safety.toFixed(2) : "?"} — ${risk.reason}`) : null,
      e.edits ? h("div", { class: "ahp-dim" }, `${e.edits} file edit(s)`) : null,
      isResult && e.result ? h("div", { class: `ahp-sec ${e.result.success ? "" : "ahp-failed"}` },
        h("div", { class: "ahp-label" }, e.result.success ? "result" : "result (failed)"),
        textBlock(e.result.pastTense, model), contentList(e.result.content, model)) : null,
      inputView, editBox,
      h("div", { class: "ahp-actions" }, buttons, approveEdited),
    ];
  }

  // A client tool waiting for this notebook's own approval (client state, not host state): the
  // buttons go to the kernel as {type: "local_approval"}, never as a protocol action.
  function localPanel(a, ro) {
    const name = a.title || a.toolName || "tool";
    const decide = (approved) => {
      if (ro) return;
      model.send({ type: "local_approval", toolCallId: a.toolCallId, chat: a.chat, approved });
    };
    return h("div", { class: "ahp-local-panel", "data-local-approval": a.toolCallId },
      h("div", { class: "ahp-local-title" }, `Approve running ${name} in this notebook${a.clientId ? ` (client ${a.clientId})` : ""}?`),
      a.input ? textBlock(a.input, model, { cls: "ahp-input-preview" }) : null,
      h("div", { class: "ahp-actions" },
        h("button", { class: "ahp-btn ahp-primary", type: "button", disabled: ro, "aria-label": `Approve ${name} locally`, onclick: () => decide(true) }, "Approve"),
        h("button", { class: "ahp-btn ahp-danger", type: "button", disabled: ro, "aria-label": `Deny ${name} locally`, onclick: () => decide(false) }, "Deny")));
  }

  function clientCard(e, ro) {
    const who = e.clientName ? `${e.clientName} (${e.clientId})` : e.clientId;
    const local = e.localApproval;
    return [
      h("div", { class: "ahp-card-head" }, badge("client execution", "ahp-kind"), h("strong", null, e.displayName),
        local ? badge("needs your approval", "ahp-kind ahp-local-kind") : null),
      local ? localPanel(local, ro) : [
        h("div", { class: "ahp-waiting" }, `Waiting on client ${who} to run it`),
        h("div", { class: "ahp-progress", role: "progressbar", "aria-label": `Waiting on client ${e.clientId}` }, h("div", { class: "ahp-progress-bar" })),
      ],
      e.toolCall && e.toolCall.invocation ? h("div", { class: "ahp-dim" }, e.toolCall.invocation) : null,
    ];
  }

  function localCard(e, ro) {
    return [
      h("div", { class: "ahp-card-head" }, badge("local approval", "ahp-kind ahp-local-kind"), h("strong", null, e.displayName),
        e.chatTitle ? h("span", { class: "ahp-dim" }, `in ${e.chatTitle}`) : null),
      localPanel(e.localApproval, ro),
    ];
  }

  function authCard(e, ro) {
    const token = h("input", { class: "ahp-input", type: "password", autocomplete: "off", disabled: ro, "aria-label": `Token for ${e.resource}`, placeholder: "access token" });
    const go = () => {
      if (!token.value || ro) return;
      model.send({ type: "authenticate", resource: e.resource, token: token.value });
      token.value = "";
    };
    token.addEventListener("keydown", (ev) => { if (ev.key === "Enter") go(); });
    return [
      h("div", { class: "ahp-card-head" }, badge("authentication", "ahp-kind ahp-auth-kind"), h("strong", null, e.displayName), badge((e.contributor || {}).label || "", "ahp-contrib")),
      h("div", { class: "ahp-auth-panel", "data-auth-required": "true" },
        h("div", { class: "ahp-auth-title" }, `Needs authentication (${e.reason || "required"})`),
        h("div", { class: "ahp-mono" }, e.resource),
        e.description ? h("div", null, e.description) : null,
        e.scopes && e.scopes.length ? h("div", null, `scopes: ${e.scopes.join(" ")}`) : null,
        h("div", { class: "ahp-row-flex" }, token,
          h("button", { class: "ahp-btn ahp-primary", type: "button", disabled: ro, "aria-label": `Authenticate ${e.displayName}`, onclick: go }, "Authenticate"))),
    ];
  }

  // a question's name: its title; without one, a one-line plain message (its id is no sentence)
  function questionLabel(q) {
    if (q.title) return q.title;
    const said = q.message && !q.message.markdown && !q.message.truncated ? (q.message.text || "").trim() : "";
    return said && !said.includes("\n") && said.length <= 160 ? said : q.id;
  }

  function questionControl(q, e, ro, onDraft) {
    const id = `q-${Math.random().toString(36).slice(2)}`;
    const asLabel = !q.title && questionLabel(q) !== q.id;
    const label = h("label", { for: id, class: "ahp-q-label" }, questionLabel(q), q.required ? h("span", { class: "ahp-req", "aria-hidden": "true" }, " *") : null);
    const answerOf = (question) => (question.answer && question.answer.state !== "skipped" ? question.answer : null);
    let control;
    let read;
    let fill; // writes an answer (or none: the default) into the control
    const hint = [];
    if (q.kind === "text") {
      const fmtType = { email: "email", uri: "url", date: "date", "date-time": "datetime-local" }[q.format] || "text";
      control = h("input", { id, class: "ahp-input", type: fmtType, disabled: ro, required: q.required, minlength: q.min ?? null, maxlength: q.max ?? null, "data-question-id": q.id });
      fill = (ans) => { control.value = ans ? ans.value ?? "" : q.default ?? ""; };
      read = () => (control.value === "" && !q.required ? null : { kind: "text", value: control.value });
      if (q.format) hint.push(`format: ${q.format}`);
      if (q.min != null || q.max != null) hint.push(`length ${q.min ?? 0}–${q.max ?? "∞"}`);
    } else if (q.kind === "number" || q.kind === "integer") {
      control = h("input", { id, class: "ahp-input", type: "number", disabled: ro, step: q.kind === "integer" ? "1" : "any", min: q.min ?? null, max: q.max ?? null, "data-question-id": q.id });
      fill = (ans) => {
        const v = ans ? ans.value : q.default;
        control.value = v == null ? "" : String(v);
      };
      read = () => {
        if (control.value === "") return null;
        const n = q.kind === "integer" ? parseInt(control.value, 10) : parseFloat(control.value);
        return Number.isFinite(n) ? { kind: "number", value: n } : null;
      };
      if (q.min != null || q.max != null) hint.push(`${q.min ?? "−∞"} to ${q.max ?? "∞"}`);
    } else if (q.kind === "boolean") {
      control = h("input", { id, type: "checkbox", class: "ahp-check", disabled: ro, "data-question-id": q.id });
      fill = (ans) => { control.checked = ans ? !!ans.value : !!q.default; };
      read = () => ({ kind: "boolean", value: control.checked });
    } else if (q.kind === "single-select" || q.kind === "multi-select") {
      const multi = q.kind === "multi-select";
      const group = h("div", { class: "ahp-options", role: multi ? "group" : "radiogroup", "aria-labelledby": `${id}-l`, id });
      label.id = `${id}-l`;
      label.removeAttribute("for");
      const boxes = (q.options || []).map((o) => {
        const box = h("input", { type: multi ? "checkbox" : "radio", name: id, value: o.id, disabled: ro, "aria-label": o.label, "data-option-id": o.id });
        group.appendChild(h("label", { class: "ahp-option" }, box, " ", o.label, o.recommended ? badge("recommended", "ahp-rec") : null, o.description ? h("span", { class: "ahp-dim" }, ` — ${o.description}`) : null));
        return box;
      });
      let free = null;
      if (q.allowFreeform) {
        free = h("input", { class: "ahp-input", type: "text", disabled: ro, placeholder: "other…", "aria-label": `Other answer for ${questionLabel(q)}` });
        group.appendChild(free);
      }
      fill = (ans) => {
        const chosen = new Set(ans ? (multi ? ans.value || [] : [ans.value]) : []);
        for (const box of boxes) box.checked = chosen.has(box.value);
        if (free) free.value = ans && ans.freeform && ans.freeform[0] ? ans.freeform[0] : "";
      };
      control = group;
      read = () => {
        const vals = boxes.filter((b) => b.checked).map((b) => b.value);
        const ff = free && free.value ? [free.value] : undefined;
        if (!vals.length && !ff) return null;
        return multi ? { kind: "selected-many", value: vals, ...(ff ? { freeformValues: ff } : {}) }
          : { kind: "selected", value: vals[0] ?? "", ...(ff ? { freeformValues: ff } : {}) };
      };
      if (multi && (q.min != null || q.max != null)) hint.push(`choose ${q.min ?? 0}–${q.max ?? "any"}`);
    } else {
      control = h("div", { class: "ahp-dim" }, `(unsupported question kind ${q.rawKind})`);
      read = () => null;
      fill = () => {};
    }
    fill(answerOf(q));
    let touched = false; // by the person here: what another client drafts no longer replaces it
    const onChange = () => { touched = true; onDraft(q, read()); };
    control.addEventListener("input", onChange);
    control.addEventListener("change", onChange);
    // another client's draft (a second device) shows in a card already open, unless the person
    // here has begun to answer this question: only views made after a draft showed it
    const update = (question) => {
      if (!touched && !control.contains(document.activeElement) && control !== document.activeElement) fill(answerOf(question));
    };
    return {
      el: h("div", { class: "ahp-question", "data-question-id": q.id, "data-question-kind": q.kind },
        label, q.message && q.message.text && !asLabel ? textBlock(q.message, model, { cls: "ahp-q-msg" }) : null, control,
        hint.length ? h("div", { class: "ahp-dim" }, hint.join(" · ")) : null),
      read, q, update,
    };
  }

  function questionCard(e, ro, hooks) {
    const debounceMs = model.get("debounce_ms") || 300;
    const pending = new Map();
    const flush = debounce(() => {
      for (const [qid, value] of pending) {
        dispatch(model, e.chat, {
          type: "chat/inputAnswerChanged", requestId: e.requestId, questionId: qid,
          ...(value ? { answer: { state: "draft", value } } : {}),
        });
      }
      pending.clear();
    }, debounceMs);
    const onDraft = (q, value) => { pending.set(q.id, value); flush(); };
    const controls = (e.questions || []).map((q) => questionControl(q, e, ro, onDraft));
    hooks.update = (entry) => {
      for (const question of entry.questions || []) {
        const c = controls.find((x) => x.q.id === question.id);
        if (c) c.update(question);
      }
    };
    // a required question left empty is said here: the host refuses the answers, and a choice
    // left empty showed nothing of it (a first-hour user)
    const missing = h("div", { class: "ahp-field-error ahp-err-text", role: "alert", hidden: true });
    const complete = (response) => {
      const empty = response === "accept" ? controls.filter((c) => c.q.required && !c.read()) : [];
      missing.hidden = !empty.length;
      if (empty.length) {
        const named = empty.map((c) => `“${questionLabel(c.q)}”`);
        missing.textContent = `${named.join(", ")} ${named.length > 1 ? "need answers" : "needs an answer"} before you submit.`;
        const first = empty[0].el.querySelector("input, select, textarea");
        if (first) first.focus();
        return;
      }
      flush.cancel();
      pending.clear();
      const action = { type: "chat/inputCompleted", requestId: e.requestId, response };
      if (response === "accept") {
        const answers = {};
        for (const c of controls) {
          const v = c.read();
          if (v) answers[c.q.id] = { state: "submitted", value: v };
        }
        action.answers = answers;
      }
      dispatch(model, e.chat, action);
    };
    const url = e.url ? safeUrl(e.url) : null;
    return [
      h("div", { class: "ahp-card-head" }, badge("question", "ahp-kind"), e.chatTitle ? h("span", { class: "ahp-dim" }, `in ${e.chatTitle}`) : null),
      e.message ? textBlock(e.message, model) : null,
      url ? h("a", { href: url, target: "_blank", rel: "noopener noreferrer nofollow" }, url) : e.rawUrl ? h("div", { class: "ahp-mono ahp-dim" }, `(link not shown: ${e.rawUrl})`) : null,
      h("form", { class: "ahp-form", onsubmit: (ev) => { ev.preventDefault(); complete("accept"); } },
        controls.map((c) => c.el),
        missing,
        h("div", { class: "ahp-actions" },
          h("button", { class: "ahp-btn ahp-primary", type: "submit", disabled: ro, "aria-label": "Submit answers" }, "Submit"),
          h("button", { class: "ahp-btn", type: "button", disabled: ro, "aria-label": "Decline question", onclick: () => complete("decline") }, "Decline"),
          h("button", { class: "ahp-btn", type: "button", disabled: ro, "aria-label": "Cancel question", onclick: () => complete("cancel") }, "Cancel"))),
    ];
  }

  function card(e, ro, hooks = {}) {
    let body;
    if (e.kind === "toolConfirmation") body = confirmationCard(e, ro);
    else if (e.kind === "toolClientExecution") body = clientCard(e, ro);
    else if (e.kind === "localApproval" && e.localApproval) body = localCard(e, ro);
    else if (e.kind === "chatInput") body = questionCard(e, ro, hooks);
    else if (e.kind === "toolAuthentication") body = authCard(e, ro);
    else body = [h("div", { class: "ahp-dim" }, `(unsupported input kind ${e.rawKind})`)];
    return h("div", {
      class: `ahp-card ahp-input-card ${e.blocking ? "ahp-blocking" : ""}`, role: "listitem",
      "data-kind": e.kind, "data-entry-id": e.id, "data-tool-call-id": e.toolCallId || null,
    }, body);
  }

  function draw() {
    const vm = model.get("model") || {};
    const ro = !!vm.readOnly || !!model.get("read_only");
    const entries = vm.entries || [];
    count.textContent = vm.count ? ` ${vm.count}${vm.blocking ? ` · ${vm.blocking} blocking` : ""}` : "";
    const seen = new Set();
    const order = [];
    for (const e of entries) {
      seen.add(e.id);
      const sig = signature(e);
      let c = cards.get(e.id);
      if (!c || c.sig !== sig || c.ro !== ro) {
        const hooks = {};
        const fresh = card(e, ro, hooks);
        if (c && c.el.contains(document.activeElement) && c.sig === sig) {
          // keep the card being edited
        } else {
          if (c) c.el.replaceWith(fresh);
          c = { sig, el: fresh, ro, hooks };
          cards.set(e.id, c);
        }
      } else if (c.hooks.update) {
        c.hooks.update(e); // only the answers changed: another client's drafts
      }
      order.push(c.el);
    }
    for (const [id, c] of cards) if (!seen.has(id)) { c.el.remove(); cards.delete(id); }
    // order the cards without recreating them
    order.forEach((node, i) => { if (list.children[i] !== node) list.insertBefore(node, list.children[i] || null); });
    const empty = list.querySelector(":scope > .ahp-empty");
    if (!entries.length && !empty) list.appendChild(h("div", { class: "ahp-empty" }, "Nothing is waiting for you."));
    if (entries.length && empty) empty.remove();
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
