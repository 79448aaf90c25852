// Outbound webhook endpoints (admin): add one (its secret is shown once),
// each endpoint's health and latest delivery attempts, and per endpoint:
// edit its events and description, send a test, rotate its secret,
// recover what it missed since a time, disable / enable, delete.
import { request } from "./api.js";
import { h, replace } from "./dom.js";
import { fmtShort, fmtFull, fmtAgo, plural } from "./format.js";
import { ask, copyButton, flagChip, toast } from "./ui.js";
import { field, showFieldErrors } from "./admin.js";
import { keep } from "./focus.js";

const enc = encodeURIComponent;
const path = (id, rest = "") => `/v1/webhook-endpoints/${enc(id)}${rest}`;

const calls = {
  list: () => request("GET", "/v1/webhook-endpoints"),
  create: (body) => request("POST", "/v1/webhook-endpoints", body),
  patch: (id, body) => request("PATCH", path(id), body),
  remove: (id) => request("DELETE", path(id)),
  attempts: (id) => request("GET", path(id, "/attempts?limit=10")),
  test: (id) => request("POST", path(id, "/test")),
  rotate: (id) => request("POST", path(id, "/rotate")),
  recover: (id, since) => request("POST", path(id, "/recover"), { since }),
};

/** The event types an endpoint can subscribe to ("*" is all of them). */
export const EVENTS = [
  "group.created",
  "group.completed",
  "group.canceled",
  "group.paused",
  "group.quorum_met",
  "group.escalated",
  "recipient.updated",
  "recipient.replied",
  "recipient.responded",
  "inbound.unmatched",
  "endpoint.disabled",
];

/** health names an endpoint's state for people: disabled, failing or healthy. */
export function health(ep) {
  if (ep.disabled) return { tone: "bad", label: "Disabled", flag: "disabled" };
  if (ep.failing_since) return { tone: "warn", label: "Failing", flag: "failing" };
  return { tone: "good", label: "Healthy", flag: "healthy" };
}

/** testOutcome says what an attempt answered: its HTTP status and error class only. */
export function testOutcome(a) {
  const code = a.status_code ? `HTTP ${a.status_code}` : "no HTTP answer";
  return a.result === "ok" ? `Test delivered: ${code}.` : `Test failed: ${code}${a.error ? ` (${a.error})` : ""}.`;
}

/**
 * eventPicker is a fieldset of checkboxes: "All events" and each type.
 * value() is the chosen list (["*"] for all); setError(msg) shows msg.
 */
function eventPicker(id, chosen = ["*"]) {
  const errId = `${id}-error`;
  const err = h("p", { class: "field-error", id: errId, role: "alert" });
  const box = (value, label) =>
    h(
      "label",
      { class: "check" },
      h("input", { type: "checkbox", value, checked: chosen.includes(value), dataset: { event: value } }),
      label,
    );
  const all = box("*", "All events");
  const each = EVENTS.map((e) => box(e, e));
  const set = h(
    "fieldset",
    { class: "event-picker", id, "aria-describedby": errId },
    h("legend", null, "Events"),
    all,
    h("div", { class: "event-list" }, each),
    err,
  );
  const inputs = () => [...set.querySelectorAll("input[type=checkbox]")];
  const sync = () => each.forEach((l) => (l.querySelector("input").disabled = all.querySelector("input").checked));
  all.querySelector("input").addEventListener("change", sync);
  sync();
  return {
    el: set,
    get input() {
      return inputs().find((i) => !i.disabled) || inputs()[0];
    },
    value() {
      if (all.querySelector("input").checked) return ["*"];
      return inputs().filter((i) => i.checked && i.value !== "*").map((i) => i.value);
    },
    setError(msg) {
      err.textContent = msg || "";
      if (msg) set.setAttribute("aria-invalid", "true");
      else set.removeAttribute("aria-invalid");
    },
  };
}

/** secretBox shows a new secret once, with the board's copy button. */
function secretBox(box, text, secret) {
  const value = h("code", { class: "one-time-password" }, secret);
  replace(box, h("p", null, text), h("p", { class: "one-time-value" }, value, copyButton(() => secret, value, "Copy secret")));
  box.hidden = false;
}

/** createForm is the "Add an endpoint" form; onCreated(ep) runs after a 201. */
function createForm(onCreated) {
  const url = field("wh-url", "URL", h("input", { type: "url", autocomplete: "off", maxlength: 2048, required: true }), "Where crewcast POSTs the events (https).");
  const events = eventPicker("wh-events");
  const description = field("wh-description", "Description", h("input", { type: "text", autocomplete: "off", maxlength: 500 }), "Optional: what listens there.");
  const signing = field(
    "wh-signing",
    "Signing",
    h("select", null, h("option", { value: "hmac", selected: true }, "HMAC (shared secret)"), h("option", { value: "ed25519" }, "Ed25519 (public key)")),
  );
  const formError = h("p", { class: "form-error", role: "alert", hidden: true });
  const submit = h("button", { type: "submit", class: "button button-primary", id: "wh-submit" }, "Add endpoint");
  async function onSubmit(e) {
    e.preventDefault();
    formError.hidden = true;
    [url, events, description].forEach((f) => f.setError(""));
    const chosen = events.value();
    if (!url.input.value.trim()) return url.setError("Enter the URL to send to."), url.input.focus();
    if (!chosen.length) return events.setError("Pick at least one event, or all."), events.input.focus();
    submit.disabled = true;
    try {
      const body = { url: url.input.value.trim(), events: chosen, signing: signing.input.value };
      if (description.input.value.trim()) body.description = description.input.value.trim();
      const ep = await calls.create(body);
      url.input.value = "";
      description.input.value = "";
      onCreated(ep);
    } catch (err) {
      if (!showFieldErrors(err, { url, events, description, signing })) {
        formError.textContent = err.message;
        formError.hidden = false;
      }
    } finally {
      submit.disabled = false;
    }
  }
  return h(
    "form",
    { class: "card admin-form", id: "wh-form", novalidate: true, onsubmit: onSubmit, "aria-labelledby": "wh-form-title" },
    h("h2", { id: "wh-form-title" }, "Add an endpoint"),
    url.el,
    events.el,
    description.el,
    signing.el,
    formError,
    submit,
  );
}

/** editForm changes an endpoint's events and description (PATCH). */
function editForm(ep, onDone) {
  const id = `wh-edit-${ep.id}`;
  const events = eventPicker(`${id}-events`, ep.events);
  const description = field(`${id}-description`, "Description", h("input", { type: "text", autocomplete: "off", maxlength: 500, value: ep.description || "" }));
  const formError = h("p", { class: "form-error", role: "alert", hidden: true });
  const cancel = h("button", { type: "button", class: "button button-small button-quiet", dataset: { focusKey: "edit-cancel" }, onclick: () => onDone(false) }, "Cancel");
  async function onSubmit(e) {
    e.preventDefault();
    formError.hidden = true;
    events.setError("");
    const chosen = events.value();
    if (!chosen.length) return events.setError("Pick at least one event, or all."), events.input.focus();
    try {
      await calls.patch(ep.id, { events: chosen, description: description.input.value.trim() });
      toast("Endpoint saved.");
      onDone(true);
    } catch (err) {
      if (!showFieldErrors(err, { events, description })) {
        formError.textContent = err.message;
        formError.hidden = false;
      }
    }
  }
  return h(
    "form",
    { class: "endpoint-edit", novalidate: true, onsubmit: onSubmit, "aria-label": `Edit ${ep.url}` },
    events.el,
    description.el,
    formError,
    h("div", { class: "endpoint-actions" }, h("button", { type: "submit", class: "button button-small button-primary", dataset: { focusKey: "edit-save" } }, "Save"), cancel),
  );
}

/** recoverForm sends again what the endpoint missed since a local time. */
function recoverForm(ep) {
  const since = field(`wh-recover-${ep.id}`, "Recover events since", h("input", { type: "datetime-local", required: true }), "Events it has not received since then are sent again.");
  async function onSubmit(e) {
    e.preventDefault();
    since.setError("");
    const at = new Date(since.input.value);
    if (!since.input.value || Number.isNaN(at.getTime())) return since.setError("Pick a date and time."), since.input.focus();
    try {
      const out = await calls.recover(ep.id, at.toISOString());
      toast(`${plural(out.queued, "event")} queued again.`);
    } catch (err) {
      if (!showFieldErrors(err, { since })) since.setError(err.message);
    }
  }
  return h(
    "form",
    { class: "endpoint-recover inline-fields", novalidate: true, onsubmit: onSubmit, "aria-label": `Recover events for ${ep.url}` },
    since.el,
    h("button", { type: "submit", class: "button button-small recover", dataset: { focusKey: "recover" } }, "Recover"),
  );
}

function attemptRow(a) {
  const ok = a.result === "ok";
  return h(
    "tr",
    { class: "attempt", dataset: { result: a.result, webhookId: a.webhook_id } },
    h("td", null, h("time", { datetime: a.at, title: fmtFull(a.at) }, fmtShort(a.at))),
    h("td", null, a.type),
    h("td", { class: "num" }, a.status_code ? String(a.status_code) : "—"),
    h("td", null, flagChip(ok ? "ok" : a.result, ok ? "good" : "bad", a.result)),
    h("td", { class: "num" }, `${a.latency_ms} ms`),
    h("td", { class: "attempt-answer" }, a.error || ""),
  );
}

/** attemptsTable is an endpoint's attempts log; load() fetches it again and returns the rows. */
function attemptsTable(ep) {
  const body = h("tbody", { class: "attempts-body" });
  const note = h("p", { class: "card-meta attempts-note" }, "Loading attempts…");
  async function load() {
    try {
      const out = await calls.attempts(ep.id);
      const rows = (out && out.attempts) || [];
      replace(body, ...rows.map(attemptRow));
      note.textContent = rows.length ? `Latest ${plural(rows.length, "attempt")}` : "No delivery attempts yet.";
      return rows;
    } catch (e) {
      note.textContent = `Cannot load attempts: ${e.message}`;
      return [];
    }
  }
  const el = [
    note,
    h(
      "div",
      { class: "attempts-scroll" },
      h(
        "table",
        { class: "roster-table attempts" },
        h("caption", { class: "sr-only" }, `Delivery attempts to ${ep.url}`),
        h("thead", null, h("tr", null, ...["When", "Event", "HTTP", "Result", "Time", "Error"].map((c) => h("th", { scope: "col" }, c)))),
        body,
      ),
    ),
  ];
  return { el, load };
}

/** sendTest queues a test event, waits for its attempt and says its HTTP status and error class. */
async function sendTest(ep, attempts, result) {
  result.textContent = "Sending a test…";
  try {
    const sent = await calls.test(ep.id);
    for (let i = 0; i < 30; i++) {
      await new Promise((r) => setTimeout(r, 300));
      const mine = (await attempts.load()).find((a) => a.webhook_id === sent.webhook_id);
      if (mine) {
        result.textContent = testOutcome(mine);
        result.dataset.result = mine.result;
        return;
      }
    }
    result.textContent = "Test queued; no answer yet. See the attempts below.";
  } catch (e) {
    result.textContent = `Cannot send a test: ${e.message}`;
  }
}

function button(label, key, onclick, kind = "") {
  return h("button", { type: "button", class: `button button-small ${key} ${kind}`.trim(), dataset: { focusKey: key }, onclick }, label);
}

/**
 * busy runs fn once at a time for btn; an error is toasted. The button is
 * marked aria-disabled, not disabled: a disabled button drops the focus.
 */
async function busy(btn, fn, what) {
  if (btn.getAttribute("aria-disabled") === "true") return;
  btn.setAttribute("aria-disabled", "true");
  try {
    await fn();
  } catch (e) {
    toast(`Cannot ${what}: ${e.message}`, "error");
  } finally {
    btn.removeAttribute("aria-disabled");
  }
}

/** actions builds an endpoint's buttons; onChange reloads the list. */
function actions(ep, parts, onChange) {
  const { attempts, result, secret, editArea } = parts;
  const test = button("Send test", "send-test", () => busy(test, () => sendTest(ep, attempts, result), "send a test"));
  const edit = button("Edit", "edit", () => {
    replace(
      editArea,
      editForm(ep, (saved) => {
        // Focus back on Edit first: the reload then keeps it there.
        edit.focus();
        replace(editArea);
        editArea.hidden = true;
        if (saved) onChange();
      }),
    );
    editArea.hidden = false;
    editArea.querySelector("input:not([disabled])").focus();
  });
  const rotate = button("Rotate secret", "rotate", async () => {
    let out = null;
    const v = await ask({
      title: "Rotate the signing secret?",
      body: [h("p", null, "A new secret signs from now on; the previous one keeps signing alongside for 24 hours, so the receiver can switch without a gap.")],
      choices: [
        { value: null, label: "Keep the secret", kind: "quiet" },
        { value: "rotate", label: "Rotate", kind: "primary" },
      ],
      act: async () => (out = await calls.rotate(ep.id)),
    });
    if (!v || !out) return rotate.focus();
    secretBox(secret, "New secret. Copy it now; it is shown only once:", out.secret);
    secret.querySelector("button").focus();
  });
  const toggle = ep.disabled
    ? button("Enable again", "enable", () =>
        busy(toggle, async () => {
          await calls.patch(ep.id, { disabled: false });
          toast("Endpoint enabled. Use recover to send what it missed.");
          onChange();
        }, "enable"),
      )
    : button("Disable", "disable", () =>
        busy(toggle, async () => {
          await calls.patch(ep.id, { disabled: true });
          toast("Endpoint disabled.");
          onChange();
        }, "disable"),
      );
  const del = button("Delete", "delete", async () => {
    const v = await ask({
      title: "Delete this endpoint?",
      body: [h("p", null, `${ep.url} gets no more events; its queue and attempts log are deleted too.`)],
      choices: [
        { value: null, label: "Keep it", kind: "quiet" },
        { value: "delete", label: "Delete", kind: "danger" },
      ],
      act: () => calls.remove(ep.id),
    });
    if (v) onChange();
    else del.focus();
  }, "button-danger");
  return h("div", { class: "endpoint-actions" }, test, edit, rotate, toggle, del);
}

function card(ep, onChange) {
  const st = health(ep);
  const attempts = attemptsTable(ep);
  const result = h("p", { class: "card-meta test-result", role: "status" });
  const secret = h("div", { class: "card one-time endpoint-secret", role: "status", hidden: true });
  const editArea = h("div", { class: "endpoint-edit-area", hidden: true });
  attempts.load();
  const detail = [];
  if (ep.disabled) detail.push(`Disabled ${fmtAgo(ep.disabled_at)}: ${ep.disabled_reason}`);
  else if (ep.failing_since) detail.push(`Failing since ${fmtFull(ep.failing_since)} (disabled after 5 days)`);
  if (ep.rotating_until) detail.push(`Previous key also signs until ${fmtFull(ep.rotating_until)}`);
  return h(
    "li",
    { class: "endpoint", dataset: { endpointId: ep.id, health: st.flag, focusRow: ep.id } },
    h("div", { class: "card-top" }, flagChip(st.label, st.tone, st.flag), h("code", { class: "endpoint-url" }, ep.url)),
    h(
      "p",
      { class: "card-meta endpoint-events" },
      `${ep.events.join(", ")} · ${ep.signing === "ed25519" ? "Ed25519" : "HMAC"}${ep.description ? ` · ${ep.description}` : ""}`,
    ),
    ...detail.map((d) => h("p", { class: "card-warn" }, d)),
    actions(ep, { attempts, result, secret, editArea }, onChange),
    result,
    secret,
    editArea,
    recoverForm(ep),
    ...attempts.el,
  );
}

/** render shows the endpoints in main and returns a cleanup function. */
export function render(main) {
  let alive = true;
  const list = h("ul", { class: "endpoint-list", id: "endpoint-list" });
  const status = h("p", { class: "list-status", role: "status", tabindex: "-1" }, "Loading…");
  const created = h("div", { id: "new-endpoint", class: "card one-time", role: "status", hidden: true });
  const form = createForm((ep) => {
    secretBox(created, `Added ${ep.url}. Copy its ${ep.secret.startsWith("whpk_") ? "public key" : "secret"} now; it is shown only once:`, ep.secret);
    load();
  });
  replace(
    main,
    h(
      "section",
      { class: "page" },
      h("div", { class: "page-head" }, h("div", { class: "page-title" }, h("h1", null, "Webhook endpoints"))),
      h("p", { class: "card-meta" }, "Your systems hear about changes here, signed per Standard Webhooks. A new secret is shown once."),
      form,
      created,
      status,
      list,
    ),
  );
  async function load() {
    try {
      const out = await calls.list();
      if (!alive) return;
      const eps = (out && out.endpoints) || [];
      status.textContent = eps.length ? plural(eps.length, "endpoint") : "No endpoints yet.";
      keep(list, () => replace(list, ...eps.map((ep) => card(ep, load))), ["disable", "enable", "send-test"], status);
    } catch (e) {
      if (alive) status.textContent = `Cannot load endpoints: ${e.message}`;
    }
  }
  load();
  return () => {
    alive = false;
  };
}
