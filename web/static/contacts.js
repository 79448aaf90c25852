// Contacts: search, add, edit, delete and CSV import with a per-line report
// (docs/design.md §11). Every field is labelled; errors are tied to their field
// with aria-invalid and aria-describedby.
import { request } from "./api.js";
import { h, replace } from "./dom.js";
import { fmtFull, plural } from "./format.js";
import { ask } from "./ui.js";

const enc = encodeURIComponent;

/** splitTags reads "night; ops, north" into ["night", "ops", "north"]. */
export function splitTags(s) {
  return String(s || "")
    .split(/[;,]/)
    .map((t) => t.trim())
    .filter(Boolean);
}

/** parseFields reads one key=value per line into an object. */
export function parseFields(s) {
  const out = {};
  for (const line of String(s || "").split("\n")) {
    const i = line.indexOf("=");
    if (i <= 0) continue;
    out[line.slice(0, i).trim()] = line.slice(i + 1).trim();
  }
  return out;
}

const consentLabels = { opted_in: "Opted in", opted_out: "Opted out", unknown: "Unknown" };

/** consentLabel is a consent state in words. */
export function consentLabel(state) {
  return consentLabels[state] || consentLabels.unknown;
}

/** consentCell shows a contact's consent state and, opened, its history
 * (GET /v1/contacts/{id}/consent), loaded the first time it is opened. */
function consentCell(c) {
  const list = h("ul", { class: "consent-history" });
  let loaded = false;
  const details = h(
    "details",
    { class: "consent" },
    h("summary", null, consentLabel(c.consent), h("span", { class: "sr-only" }, ` — consent history of ${c.name || c.number}`)),
    list,
  );
  details.addEventListener("toggle", async () => {
    if (!details.open || loaded) return;
    loaded = true;
    replace(list, h("li", { class: "muted" }, "Loading…"));
    try {
      const res = await request("GET", `/v1/contacts/${enc(c.id)}/consent`);
      const hist = (res && res.history) || [];
      replace(
        list,
        hist.length
          ? hist.map((e) =>
              h(
                "li",
                { class: "consent-entry" },
                `${fmtFull(e.at)}: ${consentLabel(e.state)} (${e.source}${e.by ? `, by ${e.by}` : ""})`,
                e.text ? h("q", null, e.text) : null,
              ),
            )
          : h("li", { class: "muted" }, "No consent recorded."),
      );
    } catch (err) {
      loaded = false;
      replace(list, h("li", { class: "form-error" }, `Could not load the history: ${err.message}`));
    }
  });
  return details;
}

function field(id, label, input, help) {
  return h(
    "div",
    { class: "field" },
    h("label", { for: id }, label),
    help ? h("p", { class: "help", id: `${id}-help` }, help) : null,
    input,
    h("div", { class: "field-error", id: `${id}-error` }),
  );
}

/** render shows the contacts page and returns a cleanup function. */
export function render(main, ctx) {
  let alive = true;
  let editing = null; // the contact being edited, or null when adding
  let timer = null;

  const search = h("input", { id: "contact-search", type: "search", autocomplete: "off", placeholder: "Name, number or email" });
  const tbody = h("tbody", { id: "contacts-body" });
  const count = h("p", { class: "muted", id: "contacts-count" });

  const inputs = {
    number: h("input", { id: "c-number", type: "tel", autocomplete: "off", "aria-describedby": "c-number-error" }),
    name: h("input", { id: "c-name", type: "text", autocomplete: "off", "aria-describedby": "c-name-error" }),
    email: h("input", { id: "c-email", type: "email", autocomplete: "off", placeholder: "ada@example.org", "aria-describedby": "c-email-help c-email-error" }),
    tags: h("input", { id: "c-tags", type: "text", autocomplete: "off", "aria-describedby": "c-tags-help c-tags-error" }),
    timezone: h("input", { id: "c-timezone", type: "text", autocomplete: "off", placeholder: "America/Chicago", "aria-describedby": "c-timezone-help c-timezone-error" }),
    fields: h("textarea", { id: "c-fields", rows: 3, spellcheck: "false", "aria-describedby": "c-fields-help c-fields-error" }),
  };
  const formTitle = h("h2", { id: "contact-form-title" }, "Add a contact");
  const formError = h("p", { class: "form-error", id: "contact-form-error", role: "alert", hidden: true });
  const save = h("button", { type: "submit", class: "button button-primary", id: "contact-save" }, "Add contact");
  const cancelEdit = h("button", { type: "button", class: "button button-quiet", id: "contact-cancel", hidden: true, onclick: () => edit(null) }, "Stop editing");
  const form = h(
    "form",
    { class: "card", id: "contact-form", novalidate: true, "aria-labelledby": "contact-form-title", onsubmit: onSave },
    formTitle,
    field("c-number", "Phone number", inputs.number),
    field("c-name", "Name", inputs.name),
    field("c-email", "Email", inputs.email, "Where an email step of a follow-up writes, or empty."),
    field("c-tags", "Tags", inputs.tags, "Separated by ; or commas, such as night; north."),
    field("c-timezone", "Time zone", inputs.timezone, "An IANA zone such as America/Chicago, or empty."),
    field("c-fields", "Fields", inputs.fields, "One name=value per line; templates use them as {{fields.name}}."),
    formError,
    h("div", { class: "form-actions" }, cancelEdit, save),
  );

  const csvFile = h("input", { id: "import-file", type: "file", accept: ".csv,text/csv", "aria-describedby": "import-help" });
  const csvText = h("textarea", { id: "import-csv", rows: 6, spellcheck: "false", "aria-describedby": "import-help" });
  const dryRun = h("input", { id: "import-dry", type: "checkbox" });
  const importBtn = h("button", { type: "submit", class: "button button-primary", id: "import-submit" }, "Import");
  const report = h("div", { class: "import-report", id: "import-report", role: "status", "aria-live": "polite" });
  const importForm = h(
    "form",
    { class: "card", id: "import-form", novalidate: true, "aria-labelledby": "import-title", onsubmit: onImport },
    h("h2", { id: "import-title" }, "Import from CSV"),
    h(
      "p",
      { class: "help", id: "import-help" },
      "First line: number,name,email,tags,timezone and any field names; consent (opted_in or opted_out) and consent_source are optional. Tags are split by ;. A number already saved is updated. An import never opts a suppressed number back in.",
    ),
    h("div", { class: "field" }, h("label", { for: "import-file" }, "CSV file"), csvFile),
    h("div", { class: "field" }, h("label", { for: "import-csv" }, "Or paste the CSV"), csvText),
    h("div", { class: "field" }, h("label", { class: "choice", for: "import-dry" }, dryRun, h("span", null, "Check only (import nothing)"))),
    h("div", { class: "form-actions" }, importBtn),
    report,
  );

  replace(
    main,
    h(
      "section",
      { class: "page" },
      h("h1", null, "Contacts"),
      h(
        "div",
        { class: "directory-tools" },
        h("div", { class: "field" }, h("label", { for: "contact-search" }, "Search contacts"), search),
      ),
      count,
      h(
        "table",
        { class: "directory-table", "aria-label": "Contacts" },
        h(
          "thead",
          null,
          h(
            "tr",
            null,
            ["Name", "Number", "Email", "Tags", "Time zone", "Fields", "Consent"].map((c) => h("th", { scope: "col" }, c)),
            h("th", { scope: "col" }, h("span", { class: "sr-only" }, "Actions")),
          ),
        ),
        tbody,
      ),
      ctx.canSend ? form : null,
      ctx.canSend ? importForm : null,
    ),
  );

  function setError(name, msg) {
    const box = document.getElementById(`c-${name}-error`);
    const input = inputs[name];
    if (!box || !input) return false;
    box.textContent = msg || "";
    if (msg) input.setAttribute("aria-invalid", "true");
    else input.removeAttribute("aria-invalid");
    return true;
  }

  function clearErrors() {
    for (const name of Object.keys(inputs)) setError(name, "");
    formError.hidden = true;
    formError.textContent = "";
  }

  function edit(c) {
    editing = c;
    clearErrors();
    inputs.number.value = c ? c.number : "";
    inputs.name.value = c ? c.name : "";
    inputs.email.value = c ? c.email || "" : "";
    inputs.tags.value = c ? (c.tags || []).join("; ") : "";
    inputs.timezone.value = c ? c.timezone : "";
    inputs.fields.value = c ? Object.entries(c.fields || {}).map(([k, v]) => `${k}=${v}`).join("\n") : "";
    formTitle.textContent = c ? `Edit ${c.name || c.number}` : "Add a contact";
    save.textContent = c ? "Save changes" : "Add contact";
    cancelEdit.hidden = !c;
    if (c) inputs.name.focus();
  }

  async function load() {
    const q = search.value.trim();
    try {
      const res = await request("GET", `/v1/contacts?limit=200${q ? `&q=${enc(q)}` : ""}`);
      if (!alive) return;
      const list = (res && res.contacts) || [];
      count.textContent = `${plural(list.length, "contact")}${res && res.next_cursor ? " (first 200 shown; search to narrow)" : ""}`;
      replace(
        tbody,
        list.length
          ? list.map((c) =>
              h(
                "tr",
                { class: "contact", dataset: { number: c.number, id: c.id } },
                h("td", { class: "contact-name" }, c.name || "—"),
                h("td", { class: "mono" }, c.number),
                h("td", { class: "contact-email" }, c.email || "—"),
                h("td", null, (c.tags || []).join("; ") || "—"),
                h("td", null, c.timezone || "—"),
                h("td", null, Object.entries(c.fields || {}).map(([k, v]) => `${k}=${v}`).join(", ") || "—"),
                h("td", { class: "contact-consent" }, consentCell(c)),
                h(
                  "td",
                  { class: "row-actions" },
                  ctx.canSend
                    ? h("button", { type: "button", class: "button button-small edit-contact", onclick: () => edit(c) }, `Edit ${c.name || c.number}`)
                    : null,
                  ctx.canSend
                    ? h("button", { type: "button", class: "button button-small button-danger delete-contact", "aria-label": `Delete ${c.name || c.number}`, onclick: () => remove(c) }, "Delete")
                    : null,
                ),
              ),
            )
          : h("tr", { class: "empty-row" }, h("td", { colspan: 8 }, q ? "No contact matches." : "No contacts yet.")),
      );
    } catch (e) {
      if (alive) count.textContent = `Could not load contacts: ${e.message}`;
    }
  }

  // remove deletes a contact after a confirmation; groups already sent
  // keep their recipients.
  function remove(c) {
    const who = c.name || c.number;
    ask({
      title: `Delete contact ${who}?`,
      body: "They leave every crew; groups already sent keep them as recipients.",
      choices: [
        { value: null, label: "Keep" },
        { value: "delete", label: `Delete ${who}`, kind: "danger" },
      ],
      act: async () => {
        await request("DELETE", `/v1/contacts/${enc(c.id)}`);
        if (editing && editing.id === c.id) edit(null);
        load();
      },
    });
  }

  async function onSave(e) {
    e.preventDefault();
    clearErrors();
    const body = {
      number: inputs.number.value.trim(),
      name: inputs.name.value,
      email: inputs.email.value.trim(),
      tags: splitTags(inputs.tags.value),
      timezone: inputs.timezone.value.trim(),
      fields: parseFields(inputs.fields.value),
    };
    if (!body.number) {
      setError("number", "Enter the phone number.");
      inputs.number.focus();
      return;
    }
    save.disabled = true;
    try {
      if (editing) await request("PATCH", `/v1/contacts/${enc(editing.id)}`, body);
      else await request("POST", "/v1/contacts", body);
      if (!alive) return;
      edit(null);
      load();
    } catch (err) {
      if (!alive) return;
      let first = null;
      const other = [];
      for (const f of err.fields || []) {
        const name = String(f.field || "").split(/[.[]/)[0];
        if (setError(name, f.message)) first = first || inputs[name];
        else other.push(`${f.field}: ${f.message}`);
      }
      if (err.status === 409) {
        setError("number", "A contact with this number already exists.");
        first = inputs.number;
      }
      formError.textContent = other.length ? other.join(" ") : "Not saved. Fix the fields marked above.";
      formError.hidden = false;
      (first || inputs.number).focus();
    } finally {
      save.disabled = false;
    }
  }

  csvFile.addEventListener("change", () => {
    const f = csvFile.files && csvFile.files[0];
    if (!f) return;
    f.text().then((t) => {
      if (alive) csvText.value = t;
    });
  });

  async function onImport(e) {
    e.preventDefault();
    const body = csvText.value;
    if (!body.trim()) {
      replace(report, h("p", { class: "form-error" }, "Choose a CSV file or paste its lines."));
      return;
    }
    importBtn.disabled = true;
    try {
      const res = await fetch(`/v1/contacts/import${dryRun.checked ? "?dry_run=1" : ""}`, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "text/csv", Accept: "application/json" },
        body,
      });
      const data = await res.json().catch(() => null);
      if (!alive) return;
      if (!res.ok && !(data && Array.isArray(data.errors))) {
        const msg = (data && data.error && data.error.message) || res.statusText;
        replace(report, h("p", { class: "form-error" }, `Not imported: ${msg}`));
        return;
      }
      const verb = dryRun.checked ? "Would import" : "Imported";
      const errs = data.errors || [];
      replace(
        report,
        h("p", { id: "import-summary" }, `${verb}: ${data.created} created, ${data.updated} updated, ${data.unchanged} unchanged.`),
        data.consent_kept_opted_out
          ? h("p", { id: "import-consent-kept" }, `${plural(data.consent_kept_opted_out, "row")} said opted_in for a suppressed number: still opted out.`)
          : null,
        errs.length
          ? [
              h("p", null, `${plural(data.errors_total || errs.length, "line")} not imported:`),
              h("ul", { id: "import-errors" }, errs.map((x) => h("li", null, `Line ${x.line}: ${x.error}`))),
            ]
          : null,
      );
      if (!dryRun.checked) load();
    } catch (err) {
      if (alive) replace(report, h("p", { class: "form-error" }, `Not imported: ${err.message}`));
    } finally {
      importBtn.disabled = false;
    }
  }

  search.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(load, 250);
  });
  load();
  search.focus();
  return () => {
    alive = false;
    clearTimeout(timer);
  };
}
