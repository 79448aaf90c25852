// The create form. Client-side checks are hints only; the server validates
// and its field errors are shown next to the field they name.
import { api, request } from "./api.js";
import { h, replace } from "./dom.js";
import { E164, cleanNumber, plural, segments, maxChars, MAX_SEGMENTS } from "./format.js";
import { sendOptions, contactPicker } from "./sendoptions.js";
import { costLines } from "./ucs2.js";

const MAX_GROUP_MMS = 8;
const LAST_FROM = "crewcast.lastFrom";

function savedFrom() {
  try {
    return localStorage.getItem(LAST_FROM) || "";
  } catch {
    return "";
  }
}

function saveFrom(v) {
  try {
    localStorage.setItem(LAST_FROM, v);
  } catch {
    // Storage may be disabled; remembering the number is only a convenience.
  }
}

/**
 * parseRecipients reads the textarea: one number per line, blank lines
 * skipped. Returns each line as typed (trimmed: what is sent, so the
 * server's errors quote it verbatim), its cleaned form (for hints) and its
 * 1-based line, so a server error on to[i] can name the line the user sees.
 */
export function parseRecipients(text) {
  const numbers = [];
  const raw = [];
  const lines = [];
  text.split("\n").forEach((line, i) => {
    const v = cleanNumber(line);
    if (v === "") return;
    numbers.push(v);
    raw.push(line.trim());
    lines.push(i + 1);
  });
  return { numbers, raw, lines };
}

/**
 * sendable counts the recipients that will actually be sent: distinct
 * numbers of a plausible shape (duplicates are merged by the server; a
 * malformed line is refused).
 */
export function sendable(numbers) {
  return new Set(numbers.filter((n) => E164.test(n))).size;
}

/**
 * fromProblem explains what is wrong with a From number, or "" when it
 * looks right. Ten digits (or eleven starting with 1) are a North American
 * number written without its country code: the fix is spelled out.
 */
export function fromProblem(value) {
  const v = cleanNumber(value);
  if (v === "") return "Enter the number to send from.";
  if (E164.test(v)) return "";
  const digits = v.replace(/^\+/, "");
  if (/^[2-9]\d{9}$/.test(digits)) return `Use international format: +1${digits}`;
  if (/^1[2-9]\d{9}$/.test(digits)) return `Use international format: +${digits}`;
  if (/^\d+$/.test(digits)) return "Use international format: + and the country code, then the number, such as +15550100000.";
  return `“${value.trim()}” is not a phone number. Use international format, such as +15550100000.`;
}

/** textProblem explains why a message text cannot be sent, or "". */
export function textProblem(text) {
  const s = segments(text);
  if (s.count <= MAX_SEGMENTS) return "";
  return `Too long: ${s.count} SMS segments (${s.encoding}); at most ${MAX_SEGMENTS}. Shorten it to about ${maxChars(s.encoding)} characters.`;
}

/**
 * parseResponses reads the response options box: one "KEY=Label" per line.
 * With exactly two options, the first answers YES and the second NO.
 */
export function parseResponses(text) {
  const out = [];
  for (const line of String(text || "").split("\n")) {
    const i = line.indexOf("=");
    if (i <= 0) continue;
    out.push({ key: line.slice(0, i).trim(), label: line.slice(i + 1).trim() });
  }
  if (out.length === 2) {
    out[0].ack = "yes";
    out[1].ack = "no";
  }
  return out;
}

/** render shows the create form in main and returns a cleanup function. */
export function render(main, ctx) {
  let alive = true;
  let sent = null; // the last parse submitted, to map to[i] back to lines

  const fromInput = h("input", {
    id: "from",
    name: "from",
    type: "tel",
    required: true,
    autocomplete: "off",
    inputmode: "tel",
    placeholder: "+15550100000",
    "aria-describedby": "from-help from-error",
    value: savedFrom(),
  });
  const toInput = h("textarea", {
    id: "to",
    name: "to",
    rows: 7,
    spellcheck: "false",
    placeholder: "+15550100001\n+15550100002",
    "aria-describedby": "to-help to-hint to-error",
  });
  const textInput = h("textarea", {
    id: "text",
    name: "text",
    rows: 4,
    required: true,
    placeholder: "Crew call 7am at the north gate. Reply YES to confirm.",
    "aria-describedby": "text-help text-error",
  });
  // Crews, a saved template and response options (docs/design.md §11).
  const crewBox = h("div", { class: "pick-list", id: "crew-picks" });
  const crewField = h(
    "fieldset",
    { class: "field", id: "crews-field", hidden: true, "aria-describedby": "crews-error" },
    h("legend", null, "Crews"),
    crewBox,
    h("div", { class: "field-error", id: "crews-error" }),
  );
  const templateSelect = h("select", { id: "template", "aria-describedby": "template-help" }, h("option", { value: "" }, "No template"));
  const templateField = h(
    "div",
    { class: "field", hidden: true, id: "template-field" },
    h("label", { for: "template" }, "Template"),
    h("p", { class: "help", id: "template-help" }, "Fills the message and the response options; you can still edit them."),
    templateSelect,
  );
  const responsesInput = h("textarea", {
    id: "responses",
    name: "responses",
    rows: 3,
    spellcheck: "false",
    placeholder: "1=Coming\n2=Can't make it",
    "aria-describedby": "responses-help responses-error",
  });
  // Quorum, follow-up, escalation, send_at, quiet hours, priority, media.
  const opts = sendOptions();
  const picker = contactPicker(() => hints());
  const previewPanel = h("div", { class: "preview-panel", id: "preview", tabindex: "-1", hidden: true });
  const previewBtn = h("button", { type: "button", class: "button", id: "preview-button", onclick: () => preview() }, "Preview");
  const modeIndividual = h("input", { type: "radio", name: "mode", id: "mode-individual", value: "individual", checked: true });
  const modeGroup = h("input", { type: "radio", name: "mode", id: "mode-group_mms", value: "group_mms" });

  // Errors and hints are text tied to their field by aria-describedby,
  // not live regions: they change as the user types, and a live region
  // would speak on every keystroke. A submit that fails moves focus to
  // the first field in error, which reads its message.
  const err = (name) => h("div", { class: "field-error", id: `${name}-error` });
  const errors = { from: err("from"), to: err("to"), text: err("text"), mode: err("mode"), responses: err("responses") };
  const toHint = h("p", { class: "hint", id: "to-hint" });
  const textHelp = h("p", { class: "help", id: "text-help" });
  const formError = h("p", { class: "form-error", id: "form-error", role: "alert", hidden: true });
  const submit = h("button", { type: "submit", class: "button button-primary", id: "submit" }, "Send");

  const form = h(
    "form",
    { class: "create-form card", id: "create-form", novalidate: true, onsubmit: onSubmit },
    h(
      "div",
      { class: "field" },
      h("label", { for: "from" }, "From number"),
      h("p", { class: "help", id: "from-help" }, "One of your provider numbers, in international format."),
      fromInput,
      errors.from,
    ),
    h(
      "div",
      { class: "field" },
      h("label", { for: "to" }, "Recipients"),
      h("p", { class: "help", id: "to-help" }, "One phone number per line, starting with + and the country code."),
      toInput,
      toHint,
      errors.to,
    ),
    crewField,
    picker.node,
    templateField,
    h(
      "div",
      { class: "field" },
      h("label", { for: "text" }, "Message"),
      textInput,
      textHelp,
      errors.text,
    ),
    h(
      "div",
      { class: "field" },
      h("label", { for: "responses" }, "Response options"),
      h(
        "p",
        { class: "help", id: "responses-help" },
        "Optional. One KEY=Label per line, such as 1=Coming. People reply with the key or the label; “Reply 1 Coming, …” is added to the message.",
      ),
      responsesInput,
      errors.responses,
    ),
    opts.node,
    h(
      "fieldset",
      { class: "field mode", "aria-describedby": "mode-error" },
      h("legend", null, "Send as"),
      h(
        "label",
        { class: "choice", for: "mode-individual" },
        modeIndividual,
        h("span", null, h("strong", null, "Individual messages"), h("span", { class: "help" }, "One text to each person; replies come back one to one.")),
      ),
      h(
        "label",
        { class: "choice", for: "mode-group_mms" },
        modeGroup,
        h("span", null, h("strong", null, "Group MMS"), h("span", { class: "help" }, `One shared thread, at most ${MAX_GROUP_MMS} people.`)),
      ),
      errors.mode,
    ),
    formError,
    previewPanel,
    h("div", { class: "form-actions" }, h("a", { class: "button button-quiet", href: "#/groups" }, "Cancel"), previewBtn, submit),
  );

  replace(
    main,
    h(
      "section",
      { class: "page page-narrow" },
      h("a", { class: "back", href: "#/groups" }, "← All groups"),
      h("h1", null, "New group message"),
      form,
    ),
  );

  const inputs = { from: fromInput, to: toInput, text: textInput, mode: modeIndividual, responses: responsesInput };

  function chosenCrews() {
    return [...crewBox.querySelectorAll("input:checked")].map((i) => i.value);
  }

  // The directory is optional: without crews or templates (or a key that
  // may not read them) the form is the plain numbers form.
  Promise.all([
    request("GET", "/v1/crews").catch(() => null),
    request("GET", "/v1/templates").catch(() => null),
    request("GET", "/v1/contacts?limit=1000").catch(() => null),
  ]).then(([cr, tp, ct]) => {
    if (!alive) return;
    picker.setContacts((ct && ct.contacts) || []);
    const crews = (cr && cr.crews) || [];
    opts.setCrews(crews);
    if (crews.length) {
      replace(
        crewBox,
        crews.map((k) =>
          h(
            "label",
            { for: `crew-${k.id}` },
            h("input", { type: "checkbox", id: `crew-${k.id}`, value: k.name, class: "crew-choice", onchange: hints }),
            h("span", null, `${k.name} (${plural(k.size, "person", "people")})`),
          ),
        ),
      );
      crewField.hidden = false;
    }
    const templates = (tp && tp.templates) || [];
    if (templates.length) {
      for (const t of templates) templateSelect.appendChild(h("option", { value: t.id }, t.name));
      templateField.hidden = false;
      const useTemplate = () => {
        const t = templates.find((x) => x.id === templateSelect.value);
        if (!t) return;
        textInput.value = t.text;
        responsesInput.value = (t.responses || []).map((o) => `${o.key}=${o.label}`).join("\n");
        opts.setFollowup(t.followup);
        hints();
      };
      templateSelect.addEventListener("change", useTemplate);
      // #/new?template=<id> ("Use this template") starts from that one.
      if (ctx.template && templates.some((x) => x.id === ctx.template)) {
        templateSelect.value = ctx.template;
        useTemplate();
      }
    }
  });

  function requestBody() {
    const parsed = parseRecipients(toInput.value);
    const body = { from: cleanNumber(fromInput.value), text: textInput.value, mode: mode() };
    if (parsed.raw.length) body.to = parsed.raw;
    const crews = chosenCrews();
    if (crews.length) body.crews = crews;
    const contacts = picker.chosen();
    if (contacts.length) body.contacts = contacts;
    const responses = parseResponses(responsesInput.value);
    if (responses.length) body.responses = responses;
    opts.apply(body);
    return { body, parsed };
  }

  // preview asks the server what a send would do, without sending: how
  // many people, who is suppressed or invalid, segments and samples.
  async function preview() {
    const { body } = requestBody();
    previewBtn.disabled = true;
    try {
      const p = await request("POST", "/v1/groups/preview", body);
      if (!alive) return;
      replace(
        previewPanel,
        h("h2", null, "Preview"),
        h("p", { id: "preview-summary" }, `${plural(p.recipients, "person", "people")} will get this message · ${plural(p.segments, "SMS segment")} (${p.encoding}).`),
        h("p", { id: "preview-when" }, `What happens when: ${opts.when(p.recipients, body)}.`),
        costLines(p, body.text || "", usePlain),
        p.suppressed_total
          ? h("p", null, `Not texted (opted out): ${p.suppressed.map((s) => `${s.number} (${s.reason})`).join(", ")}`)
          : null,
        p.invalid_total ? h("p", { class: "form-error" }, `Not phone numbers: ${p.invalid.map((x) => x.input).join(", ")}`) : null,
        p.samples.length
          ? h(
              "ul",
              { id: "preview-samples" },
              p.samples.map((s) => h("li", null, h("strong", null, s.name || s.number), h("p", { class: "preview-sample" }, s.text))),
            )
          : null,
      );
    } catch (err) {
      if (!alive) return;
      const fields = (err.fields || []).map((f) => `${f.field}: ${f.message}`);
      replace(previewPanel, h("h2", null, "Preview"), h("p", { class: "form-error" }, fields.length ? fields.join(" ") : err.message));
    } finally {
      previewBtn.disabled = false;
    }
    previewPanel.hidden = false;
    previewPanel.focus();
  }

  // usePlain puts the plain text into the field and previews it again.
  function usePlain(text) {
    textInput.value = text;
    textInput.dispatchEvent(new Event("input", { bubbles: true }));
    preview();
  }

  function mode() {
    return modeGroup.checked ? "group_mms" : "individual";
  }

  function setFieldError(name, messages) {
    const box = errors[name];
    const input = inputs[name];
    if (!messages || messages.length === 0) {
      box.replaceChildren();
      delete box.dataset.messages;
      input.removeAttribute("aria-invalid");
      return;
    }
    if (box.dataset.messages !== JSON.stringify(messages)) {
      box.dataset.messages = JSON.stringify(messages);
      replace(box, messages.length === 1 ? h("p", null, messages[0]) : h("ul", null, messages.map((m) => h("li", null, m))));
    }
    input.setAttribute("aria-invalid", "true");
  }

  function clearErrors() {
    for (const name of Object.keys(errors)) setFieldError(name, null);
    opts.clear();
    own.from = own.text = false;
    formError.hidden = true;
    formError.textContent = "";
  }

  let fromTouched = false;
  // Which field messages the form itself set (and may clear as the user
  // types); the server's stay until the next submit.
  const own = { from: false, text: false };
  function ownError(name, message) {
    if (message) {
      setFieldError(name, [message]);
      own[name] = true;
    } else if (own[name]) {
      setFieldError(name, null);
      own[name] = false;
    }
  }

  // Live hints while typing. Wrong recipient lines are flagged here and
  // refused by the server with every line named; the From and Message
  // fields explain their problem in text as soon as it is known.
  function hints() {
    const { numbers, raw, lines } = parseRecipients(toInput.value);
    const notes = [];
    const seen = new Map();
    let bad = 0;
    numbers.forEach((num, i) => {
      if (!E164.test(num)) {
        bad++;
        notes.push(`Line ${lines[i]}: “${raw[i]}” is not a phone number in international format (+<country code><number>).`);
      } else if (seen.has(num)) notes.push(`Line ${lines[i]} repeats line ${seen.get(num)}; it is sent once.`);
      else seen.set(num, lines[i]);
    });
    if (mode() === "group_mms" && numbers.length > MAX_GROUP_MMS) {
      notes.push(`Group MMS allows at most ${MAX_GROUP_MMS} recipients; you have ${numbers.length}.`);
    }
    const count = sendable(numbers);
    replace(
      toHint,
      h("span", { class: "count" }, numbers.length ? plural(count, "recipient") : "No recipients yet"),
      notes.length ? h("ul", { class: "hint-list" }, notes.slice(0, 6).map((n) => h("li", null, n))) : null,
      notes.length > 6 ? h("span", null, ` and ${notes.length - 6} more`) : null,
    );
    toHint.classList.toggle("has-notes", notes.length > 0);
    if (bad) toInput.setAttribute("aria-invalid", "true");
    else if (!errors.to.hasChildNodes()) toInput.removeAttribute("aria-invalid");
    const crewCount = chosenCrews().length;
    const contactCount = picker.chosen().length;
    const chosen = [crewCount && plural(crewCount, "crew"), contactCount && plural(contactCount, "contact")].filter(Boolean);
    if (chosen.length && count) chosen.push(plural(count, "number"));
    submit.textContent = chosen.length
      ? `Send to ${chosen.length > 1 ? chosen.slice(0, -1).join(", ") + " and " + chosen.at(-1) : chosen[0]}`
      : count
        ? `Send to ${plural(count, "recipient")}`
        : "Send";

    const text = textInput.value;
    if (text.length === 0) {
      textHelp.textContent = "Plain text. Replies such as YES or NO are recorded as acknowledgements.";
    } else {
      const s = segments(text);
      textHelp.textContent = `${plural([...text].length, "character")} · ${plural(s.count, "SMS segment")} (${s.encoding}) · at most ${MAX_SEGMENTS}`;
    }
    ownError("text", textProblem(text));
    const fromV = cleanNumber(fromInput.value);
    const looksWrong = fromV !== "" && !E164.test(fromV);
    fromInput.classList.toggle("looks-wrong", looksWrong);
    // Explain as soon as the field was left (or on submit), and clear the
    // explanation the moment it is fixed.
    if (!looksWrong) ownError("from", "");
    else if (fromTouched) ownError("from", fromProblem(fromInput.value));
  }

  // fieldErrors places the server's field errors: "from", "text", "mode",
  // "to" / "to[3]" / "recipients[3].number" (→ the recipients box, naming
  // the line); anything else goes to the form-level message.
  function fieldErrors(all) {
    const { rest: fields, first: optionBad } = opts.fieldErrors(all);
    const by = { from: [], to: [], text: [], mode: [], responses: [] };
    const other = [];
    for (const f of fields) {
      const name = String(f.field || "");
      const msg = f.message || "invalid";
      const m = /^(?:to|recipients)\[(\d+)\]/.exec(name);
      if (m) {
        const i = Number(m[1]);
        const line = sent && sent.lines[i];
        // The server quotes what was typed when it sends "input"; older
        // servers do not, so the line's text is added here.
        const what = f.input !== undefined ? "" : ` (${sent && sent.raw[i]})`;
        by.to.push(line ? `Line ${line}${what}: ${msg}` : `Recipient ${i + 1}: ${msg}`);
      } else if (name === "to" || name === "recipients") {
        by.to.push(msg);
      } else if (name.startsWith("responses") || name.startsWith("quorum")) {
        by.responses.push(msg);
      } else if (/^(crews|tags|contacts)/.test(name)) {
        // An unknown or empty crew: the server names it.
        by.to.push(msg);
      } else if (by[name]) {
        by[name].push(msg);
      } else {
        other.push(name ? `${name}: ${msg}` : msg);
      }
    }
    for (const [name, msgs] of Object.entries(by)) setFieldError(name, msgs);
    const firstBad = ["from", "to", "text", "mode", "responses"].find((n) => by[n].length);
    if (firstBad) inputs[firstBad].focus();
    else if (optionBad) optionBad.focus();
    return other;
  }

  async function onSubmit(e) {
    e.preventDefault();
    clearErrors();
    const { body, parsed } = requestBody();
    // Problems the form can name for sure are caught here; the numbers'
    // validity is the server's call (it answers with every bad line).
    fromTouched = true;
    const missing = [
      ["from", fromProblem(fromInput.value) !== "", fromProblem(fromInput.value)],
      ["to", !body.to && !body.crews && !body.contacts && !body.tags, "Add at least one recipient or choose a crew, contact or tag."],
      ["text", !body.text.trim(), "Write the message."],
      ["text", body.text.trim() !== "" && textProblem(body.text) !== "", textProblem(body.text)],
    ].filter(([, bad]) => bad);
    for (const [name, , msg] of missing) {
      if (name in own) ownError(name, msg);
      else setFieldError(name, [msg]);
    }
    if (missing.length) {
      inputs[missing[0][0]].focus();
      return;
    }
    if (opts.ladderError()) {
      opts.showLadderError(opts.ladderError());
      return;
    }
    sent = parsed;
    submit.disabled = true;
    submit.setAttribute("aria-busy", "true");
    try {
      const g = await api.createGroup(body);
      if (!alive) return;
      saveFrom(body.from);
      ctx.navigate(`#/groups/${encodeURIComponent(g.id)}`);
    } catch (err) {
      if (!alive) return;
      const hasFields = err.fields && err.fields.length > 0;
      const other = hasFields ? fieldErrors(err.fields) : [err.message];
      if (hasFields && err.fieldsTotal > err.fields.length) {
        other.push(`${err.fieldsTotal - err.fields.length} more problems are not listed; fix these and send again.`);
      }
      formError.textContent = other.length ? other.join(" ") : "Nothing was sent. Fix the fields marked above.";
      formError.hidden = false;
    } finally {
      submit.disabled = false;
      submit.removeAttribute("aria-busy");
    }
  }

  for (const el of [fromInput, toInput, textInput, modeIndividual, modeGroup, responsesInput]) el.addEventListener("input", hints);
  fromInput.addEventListener("blur", () => {
    if (fromInput.value.trim() !== "") fromTouched = true;
    hints();
  });
  hints();
  fromInput.value ? toInput.focus() : fromInput.focus();

  return () => {
    alive = false;
  };
}
