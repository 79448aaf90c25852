// Crews: named lists of contacts. Create one from saved contacts
// (checkboxes) and extra numbers; edit one where it is listed (rename,
// members in and out: the API's PATCH); delete one.
import { request } from "./api.js";
import { h, replace } from "./dom.js";
import { plural } from "./format.js";
import { ask } from "./ui.js";

const enc = encodeURIComponent;

/** render shows the crews page and returns a cleanup function. */
export function render(main, ctx) {
  let alive = true;
  let contacts = [];
  let editing = null; // the crew being edited, or null for a new one
  const list = h("div", { id: "crews-list" });
  const name = h("input", { id: "crew-name", type: "text", autocomplete: "off", "aria-describedby": "crew-name-error" });
  const desc = h("input", { id: "crew-description", type: "text", autocomplete: "off" });
  const picks = h("fieldset", { class: "field", id: "crew-members" }, h("legend", null, "Members"));
  const extra = h("textarea", { id: "crew-numbers", rows: 3, spellcheck: "false", "aria-describedby": "crew-numbers-help crew-numbers-error" });
  const nameError = h("div", { class: "field-error", id: "crew-name-error" });
  const numbersError = h("div", { class: "field-error", id: "crew-numbers-error" });
  const formError = h("p", { class: "form-error", id: "crew-form-error", role: "alert", hidden: true });
  const save = h("button", { type: "submit", class: "button button-primary", id: "crew-save" }, "Create crew");
  const title = h("h2", { id: "crew-form-title" }, "New crew");
  const cancel = h("button", { type: "button", class: "button button-quiet", id: "crew-cancel", hidden: true, onclick: () => startEdit(null) }, "Cancel edit");
  const form = h(
    "form",
    { class: "card", id: "crew-form", novalidate: true, "aria-labelledby": "crew-form-title", onsubmit: onCreate },
    title,
    h("div", { class: "field" }, h("label", { for: "crew-name" }, "Name"), name, nameError),
    h("div", { class: "field" }, h("label", { for: "crew-description" }, "Description"), desc),
    picks,
    h(
      "div",
      { class: "field" },
      h("label", { for: "crew-numbers" }, "Other numbers"),
      h("p", { class: "help", id: "crew-numbers-help" }, "One per line; a number not saved yet becomes a contact."),
      extra,
      numbersError,
    ),
    formError,
    h("div", { class: "form-actions" }, cancel, save),
  );

  replace(main, h("section", { class: "page" }, h("h1", null, "Crews"), list, ctx.canSend ? form : null));

  async function load() {
    try {
      const [cr, ct] = await Promise.all([request("GET", "/v1/crews"), request("GET", "/v1/contacts?limit=1000")]);
      if (!alive) return;
      contacts = (ct && ct.contacts) || [];
      const byID = new Map(contacts.map((c) => [c.id, c]));
      const crews = (cr && cr.crews) || [];
      replace(
        list,
        crews.length
          ? h(
              "table",
              { class: "directory-table", "aria-label": "Crews" },
              h(
                "thead",
                null,
                h("tr", null, ["Crew", "Members", "Who"].map((c) => h("th", { scope: "col" }, c)), h("th", { scope: "col" }, h("span", { class: "sr-only" }, "Actions"))),
              ),
              h(
                "tbody",
                { id: "crews-body" },
                crews.map((k) =>
                  h(
                    "tr",
                    { class: "crew", dataset: { name: k.name } },
                    h("td", null, h("strong", null, k.name), k.description ? h("p", { class: "help" }, k.description) : null),
                    h("td", { class: "crew-size" }, String(k.size)),
                    h("td", null, k.members.map((id) => (byID.get(id) ? byID.get(id).name || byID.get(id).number : id)).join(", ")),
                    h(
                      "td",
                      { class: "row-actions" },
                      ctx.canSend ? h("button", { type: "button", class: "button button-small crew-edit", "aria-label": `Edit ${k.name}`, onclick: () => startEdit(k) }, "Edit") : null,
                      ctx.canSend
                        ? h("button", { type: "button", class: "button button-small button-danger", onclick: () => remove(k) }, `Delete ${k.name}`)
                        : null,
                    ),
                  ),
                ),
              ),
            )
          : h("p", { class: "muted" }, "No crews yet."),
      );
      replace(
        picks,
        h("legend", null, "Members"),
        contacts.length
          ? h(
              "div",
              { class: "pick-list" },
              contacts.map((c) =>
                h(
                  "label",
                  { for: `pick-${c.id}` },
                  h("input", { type: "checkbox", id: `pick-${c.id}`, value: c.id, class: "crew-pick" }),
                  h("span", null, c.name || c.number, c.name ? h("span", { class: "muted" }, ` ${c.number}`) : null),
                ),
              ),
            )
          : h("p", { class: "help" }, "No saved contacts yet: add numbers below, or import contacts first."),
      );
    } catch (e) {
      if (alive) replace(list, h("p", { class: "form-error" }, `Could not load crews: ${e.message}`));
    }
  }

  // startEdit fills the form with crew k (null: back to a new crew).
  function startEdit(k) {
    editing = k;
    title.textContent = k ? `Edit ${k.name}` : "New crew";
    save.textContent = k ? "Save changes" : "Create crew";
    cancel.hidden = !k;
    name.value = k ? k.name : "";
    desc.value = k ? k.description || "" : "";
    extra.value = "";
    const members = new Set(k ? k.members : []);
    for (const box of picks.querySelectorAll("input.crew-pick")) box.checked = members.has(box.value);
    formError.hidden = true;
    if (k) name.focus();
  }

  async function remove(k) {
    ask({
      title: `Delete crew ${k.name}?`,
      body: "Its contacts stay; groups already sent keep their recipients.",
      choices: [
        { value: null, label: "Keep it" },
        { value: "delete", label: `Delete ${k.name}`, kind: "danger" },
      ],
      act: async () => {
        await request("DELETE", `/v1/crews/${enc(k.id)}`);
        load();
      },
    });
  }

  async function onCreate(e) {
    e.preventDefault();
    nameError.textContent = numbersError.textContent = "";
    name.removeAttribute("aria-invalid");
    extra.removeAttribute("aria-invalid");
    formError.hidden = true;
    const members = [...picks.querySelectorAll("input.crew-pick:checked")].map((i) => i.value);
    for (const line of extra.value.split("\n")) if (line.trim()) members.push(line.trim());
    if (!name.value.trim()) {
      nameError.textContent = "Give the crew a name.";
      name.setAttribute("aria-invalid", "true");
      name.focus();
      return;
    }
    save.disabled = true;
    try {
      const body = { name: name.value.trim(), description: desc.value.trim(), members };
      const k = editing ? await request("PATCH", `/v1/crews/${enc(editing.id)}`, body) : await request("POST", "/v1/crews", body);
      if (!alive) return;
      const verb = editing ? "Saved" : "Created";
      startEdit(null);
      formError.textContent = `${verb} ${k.name} with ${plural(k.size, "member")}.`;
      formError.hidden = false;
      load();
    } catch (err) {
      if (!alive) return;
      const f = (err.fields || [])[0];
      if (err.status === 409 || (f && f.field === "name")) {
        nameError.textContent = err.status === 409 ? "A crew with this name already exists." : f.message;
        name.setAttribute("aria-invalid", "true");
        name.focus();
      } else if (f && f.field.startsWith("members")) {
        numbersError.textContent = f.message;
        extra.setAttribute("aria-invalid", "true");
        extra.focus();
      }
      formError.textContent = `Not created: ${err.message}`;
      formError.hidden = false;
    } finally {
      save.disabled = false;
    }
  }

  load();
  return () => {
    alive = false;
  };
}
