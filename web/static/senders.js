// The Senders page (admin; docs/design.md §16): the numbers crewcast sends
// from, with provider, pool, pacing, registration, whether their provider
// can send now and how many sends went out from each in the last hour;
// above them, each provider's circuit (GET /v1/providers).
// Add a sender; remove one after a confirmation. Every change goes through
// /v1/senders, which audits it.
import { h, replace } from "./dom.js";
import { ask } from "./ui.js";
import { adminApi, field, showFieldErrors, isAdmin, notAllowed } from "./admin.js";

const KINDS = [
  ["none", "None"],
  ["10dlc", "10DLC"],
  ["toll_free", "Toll-free"],
  ["short_code", "Short code"],
];
const STATUSES = [
  ["unknown", "Unknown"],
  ["pending", "Pending"],
  ["approved", "Approved"],
  ["rejected", "Rejected"],
];
const label = (list, v) => (list.find(([k]) => k === v) || [v, v])[1];

/** registrationText says a sender's registration in words. */
export function registrationText(r) {
  if (!r || r.kind === "none") return "None";
  const parts = [label(KINDS, r.kind), label(STATUSES, r.status).toLowerCase()];
  if (r.campaign_id) parts.push(r.campaign_id);
  return parts.join(" · ");
}

const PROVIDER_NAMES = { telnyx: "Telnyx", twilio: "Twilio" };
const CIRCUIT_WORDS = { closed: "up", open: "down (circuit open: pool sends go to the other provider)", half_open: "recovering (circuit half-open: trying again)" };

/** providerText says a provider's state from GET /v1/providers in words. */
export function providerText(p) {
  const name = PROVIDER_NAMES[p.name] || p.name;
  if (!p.configured) return `${name}: not configured`;
  let t = `${name}: ${CIRCUIT_WORDS[p.circuit] || p.circuit}`;
  if (p.failures_last_minute > 0) t += `, ${p.failures_last_minute} failed ${p.failures_last_minute === 1 ? "call" : "calls"} in the last minute`;
  return t;
}

/** checkForm finds the mistakes the board can tell before asking the server. */
export function checkForm(v) {
  const errs = {};
  if (!v.number) errs.number = "Enter the number in international format, such as +15550100000.";
  else if (!/^\+?[0-9 ().-]{7,20}$/.test(v.number)) errs.number = "Use international format, such as +15550100000: a + and digits.";
  if (v.mps !== "") {
    const n = Number(v.mps);
    if (!Number.isFinite(n) || n < 0.01 || n > 1000) errs.mps = "Between 0.01 and 1000 messages a second, or empty for the default.";
  }
  if (v.pool.length > 64) errs.pool = "At most 64 characters.";
  return errs;
}

function selectOf(list, value) {
  return h("select", null, list.map(([v, l]) => h("option", { value: v, selected: v === value }, l)));
}

/** render shows the Senders page and returns a cleanup function. */
export function render(main, ctx) {
  if (!isAdmin(ctx.session)) {
    replace(main, notAllowed());
    return () => {};
  }
  let alive = true;
  const f = {
    number: field("sender-number", "Number", h("input", { type: "tel", autocomplete: "off", maxlength: 20 }), "International format, such as +15550100000."),
    provider: field("sender-provider", "Provider", selectOf([["telnyx", "Telnyx"], ["twilio", "Twilio"]], "telnyx")),
    pool: field("sender-pool", "Pool", h("input", { type: "text", autocomplete: "off", maxlength: 64 }), "Optional: senders of one pool share its groups."),
    mps: field("sender-mps", "Messages a second", h("input", { type: "text", inputmode: "decimal", autocomplete: "off" }), "Empty: the carrier's default for the registration."),
    kind: field("sender-kind", "Registration", selectOf(KINDS, "none")),
    campaign: field("sender-campaign", "Campaign or verification id", h("input", { type: "text", autocomplete: "off", maxlength: 100 })),
    status: field("sender-status", "Registration status", selectOf(STATUSES, "unknown")),
  };
  const serverFields = { number: f.number, provider: f.provider, pool: f.pool, mps: f.mps,
    "registration.kind": f.kind, "registration.campaign_id": f.campaign, "registration.status": f.status };
  const formError = h("p", { class: "form-error", role: "alert", hidden: true });
  const submit = h("button", { type: "submit", class: "button button-primary", id: "sender-submit" }, "Add sender");
  const tbody = h("tbody", { id: "sender-rows" });
  const status = h("p", { class: "list-status", role: "status" });

  function clearErrors() {
    formError.hidden = true;
    for (const x of Object.values(f)) x.setError("");
  }

  async function onSubmit(e) {
    e.preventDefault();
    clearErrors();
    const v = { number: f.number.input.value.trim(), pool: f.pool.input.value.trim(), mps: f.mps.input.value.trim() };
    const errs = checkForm(v);
    const bad = Object.keys(errs);
    if (bad.length) {
      for (const k of bad) f[k].setError(errs[k]);
      f[bad[0]].input.focus();
      return;
    }
    const body = { number: v.number, provider: f.provider.input.value, pool: v.pool,
      registration: { kind: f.kind.input.value, campaign_id: f.campaign.input.value.trim(), status: f.status.input.value } };
    if (v.mps !== "") body.mps = Number(v.mps);
    submit.disabled = true;
    try {
      const s = await adminApi.createSender(body);
      if (!alive) return;
      status.textContent = `Added ${s.number}.`;
      f.number.input.value = "";
      f.campaign.input.value = "";
      f.mps.input.value = "";
      load();
    } catch (err) {
      if (!alive) return;
      if (err.status === 409) {
        f.number.setError("This number is already a sender.");
        f.number.input.focus();
      } else if (!showFieldErrors(err, serverFields)) {
        formError.textContent = err.message;
        formError.hidden = false;
      }
    } finally {
      submit.disabled = false;
    }
  }

  function row(s) {
    const remove = h(
      "button",
      {
        type: "button",
        class: "button button-small button-danger sender-remove",
        "aria-label": `Remove ${s.number}`,
        onclick: async () => {
          const v = await ask({
            title: `Remove ${s.number}?`,
            body: [h("p", null, "Groups stop using this number: new groups from it are paced at the default rate and its pool loses it. Messages already sent are kept.")],
            choices: [
              { value: null, label: "Keep it", kind: "quiet" },
              { value: "remove", label: "Remove", kind: "danger" },
            ],
            act: () => adminApi.deleteSender(s.number),
          });
          if (v && alive) {
            status.textContent = `Removed ${s.number}.`;
            load();
          }
        },
      },
      "Remove",
    );
    return h(
      "tr",
      { dataset: { number: s.number } },
      h("td", null, h("code", null, s.number)),
      h("td", null, s.provider === "twilio" ? "Twilio" : "Telnyx"),
      h("td", null, s.pool || "—"),
      h("td", null, String(s.mps)),
      h("td", null, registrationText(s.registration)),
      h("td", { class: s.healthy ? "sender-healthy" : "sender-down" }, s.healthy ? "Healthy" : "Cannot send"),
      h("td", null, String(s.sent_last_hour)),
      h("td", { class: "actions" }, remove),
    );
  }

  const providers = h("ul", { class: "provider-states", id: "provider-states", "aria-label": "Providers" });

  async function load() {
    adminApi
      .listProviders()
      .then((out) => {
        if (alive) replace(providers, (out.providers || []).map((p) => h("li", { dataset: { provider: p.name, circuit: p.circuit } }, providerText(p))));
      })
      .catch(() => {});
    try {
      const out = await adminApi.listSenders();
      if (!alive) return;
      const ss = out.senders || [];
      replace(tbody, ss.length ? ss.map(row) : h("tr", null, h("td", { colspan: 8, class: "empty" }, "No senders yet: groups send from the server's default number.")));
    } catch (err) {
      if (!alive) return;
      status.textContent = `Could not load senders: ${err.message}`;
    }
  }

  replace(
    main,
    h(
      "section",
      { class: "page" },
      h("div", { class: "page-head" }, h("div", { class: "page-title" }, h("h1", null, "Senders"))),
      providers,
      h(
        "form",
        { class: "card admin-form", id: "sender-form", novalidate: true, onsubmit: onSubmit, "aria-labelledby": "sender-form-title" },
        h("h2", { id: "sender-form-title" }, "Add a sender"),
        Object.values(f).map((x) => x.el),
        formError,
        submit,
      ),
      status,
      h(
        "table",
        { class: "roster-table", id: "senders-table" },
        h("caption", { class: "sr-only" }, "Senders"),
        h(
          "thead",
          null,
          h("tr", null, ["Number", "Provider", "Pool", "Messages a second", "Registration", "Health", "Sent last hour", "Actions"].map((c) => h("th", { scope: "col" }, c))),
        ),
        tbody,
      ),
    ),
  );
  load();
  return () => {
    alive = false;
  };
}
