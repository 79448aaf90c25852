// The create form. Client-side checks are hints only; the server validates
// and its field errors are shown next to the field they name.
import { api } from "./api.js";
import { h, replace } from "./dom.js";
import { E164, cleanNumber, plural, segments } from "./format.js";

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
 * skipped. Returns the numbers to send and, for each, its 1-based line so
 * a server error on to[i] can name the line the user sees.
 */
export function parseRecipients(text) {
  const numbers = [];
  const lines = [];
  text.split("\n").forEach((raw, i) => {
    const v = cleanNumber(raw);
    if (v === "") return;
    numbers.push(v);
    lines.push(i + 1);
  });
  return { numbers, lines };
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
    required: true,
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
  const modeIndividual = h("input", { type: "radio", name: "mode", id: "mode-individual", value: "individual", checked: true });
  const modeGroup = h("input", { type: "radio", name: "mode", id: "mode-group_mms", value: "group_mms" });

  const err = (name) => h("div", { class: "field-error", id: `${name}-error`, "aria-live": "polite" });
  const errors = { from: err("from"), to: err("to"), text: err("text"), mode: err("mode") };
  const toHint = h("p", { class: "hint", id: "to-hint", "aria-live": "polite" });
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
    h(
      "div",
      { class: "field" },
      h("label", { for: "text" }, "Message"),
      textInput,
      textHelp,
      errors.text,
    ),
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
    h("div", { class: "form-actions" }, h("a", { class: "button button-quiet", href: "#/groups" }, "Cancel"), submit),
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

  const inputs = { from: fromInput, to: toInput, text: textInput, mode: modeIndividual };

  function mode() {
    return modeGroup.checked ? "group_mms" : "individual";
  }

  function setFieldError(name, messages) {
    const box = errors[name];
    const input = inputs[name];
    if (!messages || messages.length === 0) {
      box.replaceChildren();
      input.removeAttribute("aria-invalid");
      return;
    }
    replace(box, messages.length === 1 ? h("p", null, messages[0]) : h("ul", null, messages.map((m) => h("li", null, m))));
    input.setAttribute("aria-invalid", "true");
  }

  function clearErrors() {
    for (const name of Object.keys(errors)) setFieldError(name, null);
    formError.hidden = true;
    formError.textContent = "";
  }

  // Live hints while typing: they never block sending.
  function hints() {
    const { numbers, lines } = parseRecipients(toInput.value);
    const notes = [];
    const seen = new Map();
    numbers.forEach((num, i) => {
      if (!E164.test(num)) notes.push(`Line ${lines[i]}: “${num}” doesn't look like +<country code><number>.`);
      if (seen.has(num)) notes.push(`Line ${lines[i]} repeats line ${seen.get(num)}.`);
      else seen.set(num, lines[i]);
    });
    if (mode() === "group_mms" && numbers.length > MAX_GROUP_MMS) {
      notes.push(`Group MMS allows at most ${MAX_GROUP_MMS} recipients; you have ${numbers.length}.`);
    }
    replace(
      toHint,
      h("span", { class: "count" }, numbers.length ? plural(numbers.length, "recipient") : "No recipients yet"),
      notes.length ? h("ul", { class: "hint-list" }, notes.slice(0, 6).map((n) => h("li", null, n))) : null,
      notes.length > 6 ? h("span", null, ` and ${notes.length - 6} more`) : null,
    );
    toHint.classList.toggle("has-notes", notes.length > 0);
    submit.textContent = numbers.length ? `Send to ${plural(numbers.length, "recipient")}` : "Send";

    const text = textInput.value;
    if (text.length === 0) {
      textHelp.textContent = "Plain text. Replies such as YES or NO are recorded as acknowledgements.";
    } else {
      const s = segments(text);
      textHelp.textContent = `${plural(text.length, "character")} · ${plural(s.count, "SMS segment")} (${s.encoding})`;
    }
    const fromV = cleanNumber(fromInput.value);
    fromInput.classList.toggle("looks-wrong", fromV !== "" && !E164.test(fromV));
  }

  // fieldErrors places the server's field errors: "from", "text", "mode",
  // "to" / "to[3]" / "recipients[3].number" (→ the recipients box, naming
  // the line); anything else goes to the form-level message.
  function fieldErrors(fields) {
    const by = { from: [], to: [], text: [], mode: [] };
    const other = [];
    for (const f of fields) {
      const name = String(f.field || "");
      const msg = f.message || "invalid";
      const m = /^(?:to|recipients)\[(\d+)\]/.exec(name);
      if (m) {
        const i = Number(m[1]);
        const line = sent && sent.lines[i];
        const num = sent && sent.numbers[i];
        by.to.push(line ? `Line ${line} (${num}): ${msg}` : `Recipient ${i + 1}: ${msg}`);
      } else if (name === "to" || name === "recipients") {
        by.to.push(msg);
      } else if (by[name]) {
        by[name].push(msg);
      } else {
        other.push(name ? `${name}: ${msg}` : msg);
      }
    }
    for (const [name, msgs] of Object.entries(by)) setFieldError(name, msgs);
    const firstBad = ["from", "to", "text", "mode"].find((n) => by[n].length);
    if (firstBad) inputs[firstBad].focus();
    return other;
  }

  async function onSubmit(e) {
    e.preventDefault();
    clearErrors();
    const parsed = parseRecipients(toInput.value);
    const body = {
      from: cleanNumber(fromInput.value),
      to: parsed.numbers,
      text: textInput.value,
      mode: mode(),
    };
    // Empty required fields are caught here; everything else is the server's call.
    const missing = [
      ["from", !body.from, "Enter the number to send from."],
      ["to", body.to.length === 0, "Add at least one recipient."],
      ["text", !body.text.trim(), "Write the message."],
    ].filter(([, empty]) => empty);
    for (const [name, , msg] of missing) setFieldError(name, [msg]);
    if (missing.length) {
      inputs[missing[0][0]].focus();
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
      formError.textContent = other.length ? other.join(" ") : "Nothing was sent. Fix the fields marked above.";
      formError.hidden = false;
    } finally {
      submit.disabled = false;
      submit.removeAttribute("aria-busy");
    }
  }

  for (const el of [fromInput, toInput, textInput, modeIndividual, modeGroup]) el.addEventListener("input", hints);
  hints();
  fromInput.value ? toInput.focus() : fromInput.focus();

  return () => {
    alive = false;
  };
}
