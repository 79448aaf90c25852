// Saved templates (#/templates): a message text with its response options,
// listed, created, edited and deleted here; "Use this template" opens the
// New message form filled with it (#/new?template=<id>).
import { request } from "./api.js";
import { h, replace } from "./dom.js";
import { parseResponses } from "./create.js";
import { ask } from "./ui.js";
import { parseLadder, ladderText } from "./ladder.js";

const enc = encodeURIComponent;

/** optionsLine shows response options as "1 Coming · 2 Cannot". */
export function optionsLine(responses) {
  return (responses || []).map((o) => `${o.key} ${o.label}`).join(" · ");
}

// templateForm builds the create/edit form; onSave handles its submit and
// onCancel its "Cancel edit".
function templateForm(onSave, onCancel) {
  const err = (name) => h("div", { class: "field-error", id: `template-${name}-error` });
  const errors = { name: err("name"), text: err("text"), responses: err("responses"), followup: err("followup") };
  const inputs = {
    name: h("input", { id: "template-name", type: "text", autocomplete: "off", "aria-describedby": "template-name-error" }),
    text: h("textarea", { id: "template-text", rows: 4, "aria-describedby": "template-text-help template-text-error" }),
    responses: h("textarea", { id: "template-responses", rows: 3, spellcheck: "false", "aria-describedby": "template-responses-help template-responses-error" }),
    followup: h("textarea", { id: "template-followup", rows: 3, spellcheck: "false", placeholder: "5m sms\n10m voice\n20m email", "aria-describedby": "template-followup-help template-followup-error" }),
  };
  const title = h("h2", { id: "template-form-title" }, "New template");
  const status = h("p", { class: "form-status", id: "template-status", role: "status" });
  const save = h("button", { type: "submit", class: "button button-primary", id: "template-save" }, "Save template");
  const cancel = h("button", { type: "button", class: "button button-quiet", id: "template-cancel", hidden: true, onclick: onCancel }, "Cancel edit");
  const form = h(
    "form",
    { class: "card", id: "template-form", novalidate: true, "aria-labelledby": "template-form-title", onsubmit: onSave },
    title,
    h("div", { class: "field" }, h("label", { for: "template-name" }, "Name"), inputs.name, errors.name),
    h(
      "div",
      { class: "field" },
      h("label", { for: "template-text" }, "Message"),
      h("p", { class: "help", id: "template-text-help" }, "Variables such as {{first_name}} or {{fields.site | default \"the depot\"}} are filled per person."),
      inputs.text,
      errors.text,
    ),
    h(
      "div",
      { class: "field" },
      h("label", { for: "template-responses" }, "Response options"),
      h("p", { class: "help", id: "template-responses-help" }, "Optional. One KEY=Label per line, such as 1=Coming."),
      inputs.responses,
      errors.responses,
    ),
    h(
      "div",
      { class: "field" },
      h("label", { for: "template-followup" }, "Follow-up ladder"),
      h("p", { class: "help", id: "template-followup-help" }, "Optional. One step a line: AFTER CHANNEL [TEXT], such as 10m voice; AFTER counts from the first send."),
      inputs.followup,
      errors.followup,
    ),
    status,
    h("div", { class: "form-actions" }, cancel, save),
  );
  return { form, errors, inputs, title, status, save, cancel };
}

// templateTable lists templates with their actions (on.edit, on.remove).
function templateTable(ts, canSend, on) {
  if (!ts.length) return h("p", { class: "muted" }, "No templates yet. Save a message you send often, with its response options.");
  const row = (t) =>
    h(
      "tr",
      { class: "template", dataset: { name: t.name, id: t.id } },
      h("th", { scope: "row" }, t.name),
      h("td", { class: "template-text" }, t.text),
      h("td", { class: "template-responses" }, optionsLine(t.responses) || "—"),
      h(
        "td",
        { class: "row-actions" },
        canSend ? h("a", { class: "button button-small template-use", href: `#/new?template=${enc(t.id)}` }, "Use this template", h("span", { class: "sr-only" }, `: ${t.name}`)) : null,
        canSend ? h("button", { type: "button", class: "button button-small template-edit", "aria-label": `Edit ${t.name}`, onclick: () => on.edit(t) }, "Edit") : null,
        canSend ? h("button", { type: "button", class: "button button-small button-danger template-delete", "aria-label": `Delete ${t.name}`, onclick: () => on.remove(t) }, "Delete") : null,
      ),
    );
  return h(
    "table",
    { class: "directory-table", "aria-label": "Templates" },
    h("thead", null, h("tr", null, ["Name", "Message", "Responses"].map((c) => h("th", { scope: "col" }, c)), h("th", { scope: "col" }, h("span", { class: "sr-only" }, "Actions")))),
    h("tbody", { id: "templates-body" }, ts.map(row)),
  );
}

// fieldOf is the form field a server error names, or null.
function fieldOf(name) {
  if (name.startsWith("responses")) return "responses";
  if (name.startsWith("followup")) return "followup";
  return name === "name" || name === "text" ? name : null;
}

/** render shows the templates page and returns a cleanup function. */
export function render(main, ctx) {
  let alive = true;
  let editing = null; // the template being edited, or null for a new one
  const list = h("div", { id: "templates-list" });
  const { form, errors, inputs, title, status, save, cancel } = templateForm(onSave, () => startNew());
  replace(main, h("section", { class: "page" }, h("h1", null, "Templates"), list, ctx.canSend ? form : null));

  async function load() {
    try {
      const out = await request("GET", "/v1/templates");
      if (alive) replace(list, templateTable((out && out.templates) || [], ctx.canSend, { edit: startEdit, remove }));
    } catch (e) {
      if (alive) replace(list, h("p", { class: "form-error" }, `Could not load templates: ${e.message}`));
    }
  }

  function clearErrors() {
    for (const [name, box] of Object.entries(errors)) {
      box.textContent = "";
      inputs[name].removeAttribute("aria-invalid");
    }
  }

  function startNew() {
    editing = null;
    title.textContent = "New template";
    save.textContent = "Save template";
    cancel.hidden = true;
    inputs.name.value = inputs.text.value = inputs.responses.value = inputs.followup.value = "";
    clearErrors();
  }

  function startEdit(t) {
    editing = t;
    title.textContent = `Edit ${t.name}`;
    save.textContent = "Save changes";
    cancel.hidden = false;
    inputs.name.value = t.name;
    inputs.text.value = t.text;
    inputs.responses.value = (t.responses || []).map((o) => `${o.key}=${o.label}`).join("\n");
    inputs.followup.value = ladderText(t.followup && t.followup.steps);
    clearErrors();
    status.textContent = "";
    inputs.name.focus();
  }

  function remove(t) {
    ask({
      title: `Delete template ${t.name}?`,
      body: "Groups already sent from it keep their text.",
      choices: [
        { value: null, label: "Keep it" },
        { value: "delete", label: `Delete ${t.name}`, kind: "danger" },
      ],
      act: async () => {
        await request("DELETE", `/v1/templates/${enc(t.id)}`);
        if (editing && editing.id === t.id) startNew();
        status.textContent = `Deleted ${t.name}.`;
        load();
      },
    });
  }

  async function onSave(e) {
    e.preventDefault();
    clearErrors();
    status.textContent = "";
    const body = { name: inputs.name.value.trim(), text: inputs.text.value, responses: parseResponses(inputs.responses.value) };
    const missing = !body.name ? ["name", "Give the template a name."] : !body.text.trim() ? ["text", "Write the message."] : null;
    if (missing) return showError(missing[0], missing[1]);
    const ladder = parseLadder(inputs.followup.value);
    if (ladder.error) return showError("followup", ladder.error);
    // The ladder is written only when it changed: a follow-up in the old
    // form saved through the API stays unless the ladder replaces it.
    const before = editing ? ladderText(editing.followup && editing.followup.steps) : "";
    if (ladderText(ladder.steps) !== before) body.followup = ladder.steps.length ? { steps: ladder.steps } : null;
    save.disabled = true;
    try {
      const t = editing ? await request("PATCH", `/v1/templates/${enc(editing.id)}`, body) : await request("POST", "/v1/templates", body);
      if (!alive) return;
      const verb = editing ? "Saved" : "Created";
      startNew();
      status.textContent = `${verb} ${t.name}.`;
      load();
    } catch (err) {
      if (!alive) return;
      const f = (err.fields || []).find((x) => fieldOf(String(x.field || "")));
      if (err.status === 409) showError("name", "A template with this name already exists.");
      else if (f) showError(fieldOf(f.field), f.message);
      else status.textContent = `Not saved: ${err.message}`;
    } finally {
      save.disabled = false;
    }
  }

  function showError(name, message) {
    errors[name].textContent = message;
    inputs[name].setAttribute("aria-invalid", "true");
    inputs[name].focus();
  }

  load();
  return () => {
    alive = false;
  };
}
