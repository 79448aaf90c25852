// Outbound webhook endpoints (admin): each endpoint's health, its latest
// delivery attempts, and a "Send test" button. Endpoints are created and
// changed through the API (their secret is shown once, there).
import { request } from "./api.js";
import { h, replace } from "./dom.js";
import { fmtShort, fmtFull, fmtAgo, plural } from "./format.js";
import { flagChip, toast } from "./ui.js";

const enc = encodeURIComponent;

const calls = {
  list: () => request("GET", "/v1/webhook-endpoints"),
  attempts: (id) => request("GET", `/v1/webhook-endpoints/${enc(id)}/attempts?limit=10`),
  test: (id) => request("POST", `/v1/webhook-endpoints/${enc(id)}/test`),
  enable: (id) => request("PATCH", `/v1/webhook-endpoints/${enc(id)}`, { disabled: false }),
};

/** health names an endpoint's state for people: disabled, failing or healthy. */
export function health(ep) {
  if (ep.disabled) return { tone: "bad", label: "Disabled", flag: "disabled" };
  if (ep.failing_since) return { tone: "warn", label: "Failing", flag: "failing" };
  return { tone: "good", label: "Healthy", flag: "healthy" };
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

function card(ep, onChange) {
  const st = health(ep);
  const body = h("tbody", { class: "attempts-body" });
  const note = h("p", { class: "card-meta attempts-note" }, "Loading attempts…");
  const testBtn = h("button", { type: "button", class: "button button-small send-test" }, "Send test");
  testBtn.addEventListener("click", async () => {
    testBtn.disabled = true;
    try {
      const sent = await calls.test(ep.id);
      toast("Test event queued.");
      // Poll until its attempt is logged (the worker sends it at once).
      for (let i = 0; i < 20; i++) {
        await new Promise((r) => setTimeout(r, 300));
        const rows = await loadAttempts();
        if (rows.some((a) => a.webhook_id === sent.webhook_id)) break;
      }
    } catch (e) {
      toast(`Cannot send a test: ${e.message}`, "error");
    } finally {
      testBtn.disabled = false;
    }
  });
  const enableBtn = ep.disabled
    ? h("button", { type: "button", class: "button button-small enable" }, "Enable again")
    : null;
  if (enableBtn) {
    enableBtn.addEventListener("click", async () => {
      enableBtn.disabled = true;
      try {
        await calls.enable(ep.id);
        toast("Endpoint enabled. Use recover to send what it missed.");
        onChange();
      } catch (e) {
        enableBtn.disabled = false;
        toast(`Cannot enable: ${e.message}`, "error");
      }
    });
  }
  async function loadAttempts() {
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
  loadAttempts();
  const detail = [];
  if (ep.disabled) detail.push(`Disabled ${fmtAgo(ep.disabled_at)}: ${ep.disabled_reason}`);
  else if (ep.failing_since) detail.push(`Failing since ${fmtFull(ep.failing_since)} (disabled after 5 days)`);
  if (ep.rotating_until) detail.push(`Previous key also signs until ${fmtFull(ep.rotating_until)}`);
  return h(
    "li",
    { class: "endpoint", dataset: { endpointId: ep.id, health: st.flag } },
    h("div", { class: "card-top" }, flagChip(st.label, st.tone, st.flag), h("code", { class: "endpoint-url" }, ep.url)),
    h(
      "p",
      { class: "card-meta" },
      `${ep.events.join(", ")} · ${ep.signing === "ed25519" ? "Ed25519" : "HMAC"}${ep.description ? ` · ${ep.description}` : ""}`,
    ),
    ...detail.map((d) => h("p", { class: "card-warn" }, d)),
    h("div", { class: "endpoint-actions" }, testBtn, enableBtn),
    note,
    h(
      "div",
      { class: "attempts-scroll" },
      h(
        "table",
        { class: "roster-table attempts" },
        h(
          "thead",
          null,
          h("tr", null, ...["When", "Event", "HTTP", "Result", "Time", "Error"].map((c) => h("th", { scope: "col" }, c))),
        ),
        body,
      ),
    ),
  );
}

/** render shows the endpoints in main and returns a cleanup function. */
export function render(main) {
  let alive = true;
  const list = h("ul", { class: "endpoint-list", id: "endpoint-list" });
  const status = h("p", { class: "list-status", role: "status" }, "Loading…");
  replace(
    main,
    h(
      "section",
      { class: "page" },
      h("div", { class: "page-head" }, h("div", { class: "page-title" }, h("h1", null, "Webhook endpoints"))),
      h(
        "p",
        { class: "card-meta" },
        "Your systems hear about changes here, signed per Standard Webhooks. Add or change endpoints with POST /v1/webhook-endpoints.",
      ),
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
      replace(list, ...eps.map((ep) => card(ep, load)));
    } catch (e) {
      if (alive) status.textContent = `Cannot load endpoints: ${e.message}`;
    }
  }
  load();
  return () => {
    alive = false;
  };
}
