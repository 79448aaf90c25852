// The New message form's options beyond who and what (docs/operations.md,
// "The board for dispatchers"): tags, quorum, follow-up, escalation,
// send_at in the viewer's zone, quiet hours, priority and media URLs; and
// the preview's line saying what will happen when.
import { h, replace } from "./dom.js";
import { fmtSchedule, fmtHeld, localZone, plural } from "./format.js";
import { parseLadder, ladderText, ladderWhen } from "./ladder.js";

/** parseDuration reads a Go-style duration ("90s", "10m", "1h30m") as ms; null if it is not one. */
export function parseDuration(s) {
  const v = String(s || "").trim();
  if (!/^(\d+(\.\d+)?(h|m|s))+$/.test(v)) return null;
  const unit = { h: 3600e3, m: 60e3, s: 1e3 };
  let ms = 0;
  for (const [, n, , u] of v.matchAll(/(\d+(\.\d+)?)(h|m|s)/g)) ms += Number(n) * unit[u];
  return ms;
}

const lines = (s) =>
  String(s || "")
    .split(/[\n,]/)
    .map((x) => x.trim())
    .filter(Boolean);

function field(id, label, help, input) {
  return h(
    "div",
    { class: "field" },
    h("label", { for: id }, label),
    help ? h("p", { class: "help", id: `${id}-help` }, help) : null,
    input,
  );
}

// optionInputs builds the option inputs, their error boxes and which
// input each error focuses.
function optionInputs() {
  // describedby names the help and error texts (ids that exist) of a field.
  const input = (id, describedby, attrs = {}) => h("input", { id, type: "text", autocomplete: "off", "aria-describedby": describedby, ...attrs });
  const el = {
    tags: input("tags", "tags-help tags-error", { placeholder: "night, north" }),
    quorumResponse: input("quorum-response", "quorum-help quorum-error", { size: 4 }),
    quorumCount: input("quorum-count", "quorum-help quorum-error", { type: "number", min: 1, inputmode: "numeric" }),
    followupAfter: input("followup-after", "followup-help followup-error", { placeholder: "10m" }),
    followupMax: input("followup-max", "followup-help followup-error", { type: "number", min: 1, max: 10, value: "1" }),
    followupText: input("followup-text", "followup-help followup-error"),
    followupSteps: h("textarea", { id: "followup-steps", rows: 3, spellcheck: "false", placeholder: "5m sms\n10m voice\n20m email", "aria-describedby": "followup-steps-help followup-error" }),
    escalateAfter: input("escalate-after", "escalate-help escalate-error", { placeholder: "30m" }),
    escalateTo: h("textarea", { id: "escalate-to", rows: 2, spellcheck: "false", "aria-describedby": "escalate-to-help escalate-error" }),
    escalateText: input("escalate-text", "escalate-help escalate-error"),
    sendAt: h("input", { id: "send-at", type: "datetime-local", step: 1, "aria-describedby": "send-at-help send_at-error" }),
    quietHours: input("quiet-hours", "quiet-help quiet_hours-error", { placeholder: "22:00-06:30" }),
    critical: h("input", { id: "priority-critical", type: "checkbox", "aria-describedby": "priority-help" }),
    media: h("textarea", { id: "media-urls", rows: 2, spellcheck: "false", "aria-describedby": "media-urls-help media_urls-error" }),
    escalateCrews: h("div", { class: "pick-list", id: "escalate-crews", role: "group", "aria-labelledby": "escalate-crews-label" }),
    quiet: ["default", "custom", "off"].map((v) => h("input", { type: "radio", name: "quiet", id: `quiet-${v}`, value: v, checked: v === "default" })),
  };
  el.quietHours.addEventListener("input", () => (el.quiet[1].checked = true));
  const errBox = (name) => h("div", { class: "field-error", id: `${name}-error` });
  const errors = {};
  for (const k of ["tags", "quorum", "followup", "escalate", "send_at", "quiet_hours", "media_urls"]) errors[k] = errBox(k);
  const focusOf = { tags: el.tags, quorum: el.quorumResponse, followup: el.followupAfter, escalate: el.escalateAfter, send_at: el.sendAt, quiet_hours: el.quietHours, media_urls: el.media };
  return { el, errors, focusOf };
}

// optionsNode lays the inputs out as labelled fields and fieldsets.
function optionsNode(el, errors) {
  const zone = localZone() || "your time zone";
  const set = (legend, ...kids) => h("fieldset", { class: "field option-set" }, h("legend", null, legend), ...kids);
  const help = (id, text) => h("p", { class: "help", id }, text);
  const pair = (...kids) => h("div", { class: "inline-fields" }, ...kids);
  return h(
    "div",
    { class: "send-options", id: "send-options" },
    field("tags", "Tags", "Optional. Everyone whose contact has one of these tags, comma-separated.", [el.tags, errors.tags]),
    set("Quorum", help("quorum-help", "Optional. Stop when this many choose the option (its key, such as 1)."), pair(field("quorum-response", "Option", null, el.quorumResponse), field("quorum-count", "How many", null, el.quorumCount)), errors.quorum),
    set(
      "Follow-up",
      help("followup-help", "Optional. Remind whoever has not answered after a while (10m, 1h), at most Max times."),
      pair(field("followup-after", "After", null, el.followupAfter), field("followup-max", "Max", null, el.followupMax)),
      field("followup-text", "Reminder text", null, el.followupText),
      field("followup-steps", "Or a ladder of steps", "One step a line: AFTER CHANNEL [TEXT], such as 10m voice. AFTER counts from the first send; an answer on any channel stops the rest. Leave After and Max empty.", el.followupSteps),
      errors.followup,
    ),
    set(
      "Escalation",
      help("escalate-help", "Optional. Tell these crews or numbers who has not answered after a while."),
      field("escalate-after", "After", null, el.escalateAfter),
      h("div", { class: "field" }, h("span", { class: "label", id: "escalate-crews-label" }, "Crews"), el.escalateCrews),
      field("escalate-to", "Numbers", "One per line.", el.escalateTo),
      field("escalate-text", "Text", null, el.escalateText),
      errors.escalate,
    ),
    field("send-at", "Send at", `Optional; empty sends now. In your time zone (${zone}).`, [el.sendAt, errors.send_at]),
    set(
      "Quiet hours",
      help("quiet-help", "When people are not texted; a message due then waits until they end."),
      h("label", { class: "choice", for: "quiet-default" }, el.quiet[0], h("span", null, "Server default")),
      h("label", { class: "choice", for: "quiet-custom" }, el.quiet[1], h("span", null, "These hours")),
      h("div", { class: "field" }, h("label", { for: "quiet-hours" }, "Hours (HH:MM-HH:MM)"), el.quietHours),
      h("label", { class: "choice", for: "quiet-off" }, el.quiet[2], h("span", null, "Off: send at any hour")),
      errors.quiet_hours,
    ),
    h("div", { class: "field" }, h("label", { class: "check", for: "priority-critical" }, el.critical, " Critical"), help("priority-help", "A critical message is sent even during quiet hours.")),
    field("media-urls", "Media URLs", "Optional. Pictures or files to attach, one https URL per line (sent as MMS).", [el.media, errors.media_urls]),
  );
}

// applyOptions adds the options that are set to a create/preview body.
function applyOptions(el, body) {
  if (lines(el.tags.value).length) body.tags = lines(el.tags.value);
  if (el.quorumResponse.value.trim() || el.quorumCount.value) body.quorum = { response: el.quorumResponse.value.trim(), count: Number(el.quorumCount.value) };
  const ladder = parseLadder(el.followupSteps.value);
  if (el.followupAfter.value.trim()) {
    body.followup = { after: el.followupAfter.value.trim(), max: Number(el.followupMax.value) || 1 };
  }
  if (ladder.steps && ladder.steps.length) body.followup = { ...(body.followup || {}), steps: ladder.steps };
  if (body.followup && el.followupText.value.trim()) body.followup.text = el.followupText.value.trim();
  const crews = [...el.escalateCrews.querySelectorAll("input:checked")].map((i) => i.value);
  if (el.escalateAfter.value.trim() || crews.length || el.escalateTo.value.trim()) {
    body.escalate = { after: el.escalateAfter.value.trim() };
    if (crews.length) body.escalate.crews = crews;
    if (lines(el.escalateTo.value).length) body.escalate.to = lines(el.escalateTo.value);
    if (el.escalateText.value.trim()) body.escalate.text = el.escalateText.value.trim();
  }
  // datetime-local is the viewer's wall clock; Date reads it in their zone.
  if (el.sendAt.value) body.send_at = new Date(el.sendAt.value).toISOString();
  const q = el.quiet.find((r) => r.checked).value;
  if (q === "off") body.quiet_hours = "off";
  else if (q === "custom") body.quiet_hours = el.quietHours.value.trim();
  if (el.critical.checked) body.priority = "critical";
  if (lines(el.media.value).length) body.media_urls = lines(el.media.value);
  return body;
}

/** whenLine says what a body will do when, for n recipients: "8 now, reminder at 10:40 …". */
export function whenLine(n, body) {
  const start = body.send_at ? new Date(body.send_at) : new Date();
  const parts = [body.send_at ? `${n} at ${fmtSchedule(body.send_at)}` : `${n} now`];
  const at = (after) => {
    const ms = parseDuration(after);
    return ms === null ? `after ${after}` : `at ${fmtHeld(new Date(start.getTime() + ms).toISOString())}`;
  };
  if (body.followup && body.followup.steps) {
    parts.push(`follow-up ${ladderWhen(body.followup.steps, at)} to whoever has not answered`);
  } else if (body.followup) {
    const f = body.followup;
    parts.push(`reminder ${at(f.after)} to whoever has not answered${f.max > 1 ? `, then every ${f.after} (${plural(f.max, "reminder")} at most)` : ""}`);
  }
  if (body.escalate) {
    const who = [...(body.escalate.crews || []), ...(body.escalate.to || [])].join(", ") || "nobody yet";
    parts.push(`escalate to ${who} ${at(body.escalate.after)}`);
  }
  if (body.quiet_hours === "off") parts.push("quiet hours off");
  else if (body.quiet_hours) parts.push(`quiet hours ${body.quiet_hours}`);
  if (body.priority === "critical") parts.push("critical: sent even in quiet hours");
  if (body.quorum) parts.push(`stops when ${body.quorum.count} choose ${body.quorum.response}`);
  return parts.join(", ");
}

/** sendOptions builds the option fields; see the returned object's methods. */
export function sendOptions() {
  const { el, errors, focusOf } = optionInputs();
  return {
    node: optionsNode(el, errors),
    /** setCrews offers the directory's crews as escalation targets. */
    setCrews(crews) {
      replace(
        el.escalateCrews,
        crews.map((k) => h("label", { for: `esc-${k.id}` }, h("input", { type: "checkbox", id: `esc-${k.id}`, value: k.name }), h("span", null, k.name))),
      );
    },
    apply: (body) => applyOptions(el, body),
    /** ladderError is the New message form's own check of the ladder lines ("" when they read). */
    ladderError: () => parseLadder(el.followupSteps.value).error || "",
    /** showLadderError shows that check's message on the follow-up. */
    showLadderError(msg) {
      errors.followup.textContent = msg;
      el.followupSteps.setAttribute("aria-invalid", "true");
      el.followupSteps.focus();
    },
    /** setFollowup fills the follow-up fields from a template's (or clears them). */
    setFollowup(f) {
      el.followupAfter.value = (f && f.after) || "";
      el.followupMax.value = String((f && f.max) || 1);
      el.followupText.value = (f && f.text) || "";
      el.followupSteps.value = ladderText(f && f.steps);
    },
    /** fieldErrors shows the server's errors on these options; returns the others. */
    fieldErrors(fields) {
      const rest = [];
      let first = null;
      for (const f of fields) {
        const name = String(f.field || "");
        const key = Object.keys(errors).find((k) => name === k || name.startsWith(k + ".") || name.startsWith(k + "["));
        if (!key) {
          rest.push(f);
          continue;
        }
        errors[key].textContent = f.message || "invalid";
        focusOf[key].setAttribute("aria-invalid", "true");
        first = first || focusOf[key];
      }
      return { rest, first };
    },
    clear() {
      for (const [k, box] of Object.entries(errors)) {
        box.textContent = "";
        focusOf[k].removeAttribute("aria-invalid");
        el.followupSteps.removeAttribute("aria-invalid");
      }
    },
    when: whenLine,
  };
}

/**
 * contactPicker lets the dispatcher choose saved contacts by name or
 * number (the API's `contacts`, by id), with a filter for a long list.
 */
export function contactPicker(onChange) {
  const filter = h("input", { id: "contact-filter", type: "search", autocomplete: "off", "aria-describedby": "contact-filter-help" });
  const box = h("div", { class: "pick-list", id: "contact-picks" });
  const node = h(
    "fieldset",
    { class: "field", id: "contacts-field", hidden: true },
    h("legend", null, "Contacts"),
    h("label", { for: "contact-filter" }, "Find"),
    h("p", { class: "help", id: "contact-filter-help" }, "Type part of a name or number; tick the people to text."),
    filter,
    box,
  );
  filter.addEventListener("input", () => {
    const q = filter.value.trim().toLowerCase();
    for (const l of box.querySelectorAll("label")) l.hidden = q !== "" && !l.dataset.search.includes(q);
  });
  return {
    node,
    setContacts(contacts) {
      replace(
        box,
        contacts.map((c) =>
          h(
            "label",
            { for: `pick-contact-${c.id}`, dataset: { search: `${c.name || ""} ${c.number}`.toLowerCase() } },
            h("input", { type: "checkbox", id: `pick-contact-${c.id}`, value: c.id, class: "contact-choice", onchange: onChange }),
            h("span", null, c.name || c.number, c.name ? h("span", { class: "muted" }, ` ${c.number}`) : null),
          ),
        ),
      );
      node.hidden = contacts.length === 0;
    },
    chosen() {
      return [...box.querySelectorAll("input:checked")].map((i) => i.value);
    },
  };
}
