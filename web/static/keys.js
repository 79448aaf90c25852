// The API keys page (admin): create a key (shown once), see names,
// scopes, last use and expiry, revoke.
import { h, replace } from "./dom.js";
import { ask, copyButton } from "./ui.js";
import { adminApi, field, showFieldErrors, when, isAdmin, notAllowed } from "./admin.js";
import { keyName } from "./auditwords.js";

const SCOPES = [
  ["read", "Read — groups and reports"],
  ["send", "Send — also send and operate groups"],
  ["admin", "Admin — everything"],
];

/** keyStatus says whether a key works: revoked, expired, or active (until its expiry). */
function keyStatus(k) {
  if (k.revoked_at) return `Revoked ${when(k.revoked_at)}`;
  if (!k.expires_at) return "Active";
  if (Date.parse(k.expires_at) <= Date.now()) return `Expired ${when(k.expires_at)}`;
  return `Active, expires ${when(k.expires_at)}`;
}

/** render shows the API keys page and returns a cleanup function. */
export function render(main, ctx) {
  if (!isAdmin(ctx.session)) {
    replace(main, notAllowed());
    return () => {};
  }
  let alive = true;
  const name = field("key-name", "Name", h("input", { type: "text", autocomplete: "off", maxlength: 100 }), "What the key is for, e.g. the script that uses it.");
  const scope = field("key-scope", "Scope", h("select", null, SCOPES.map(([v, l]) => h("option", { value: v, selected: v === "send" }, l))));
  const formError = h("p", { class: "form-error", role: "alert", hidden: true });
  const secret = h("div", { id: "new-key", class: "card one-time", role: "status", hidden: true });
  const submit = h("button", { type: "submit", class: "button button-primary", id: "key-submit" }, "Create key");
  const tbody = h("tbody", { id: "key-rows" });
  const status = h("p", { class: "list-status", role: "status" });

  async function onSubmit(e) {
    e.preventDefault();
    formError.hidden = true;
    name.setError("");
    submit.disabled = true;
    try {
      const k = await adminApi.createKey(name.input.value.trim(), [scope.input.value]);
      if (!alive) return;
      const value = h("code", { class: "one-time-password", id: "new-key-value" }, k.key);
      replace(
        secret,
        h("p", null, `Created ${k.name || k.id} (${k.scopes.join(", ")}). Copy the key now; it is shown only once:`),
        h("p", { class: "one-time-value" }, value, copyButton(() => k.key, value, "Copy key")),
      );
      secret.hidden = false;
      name.input.value = "";
      load();
    } catch (err) {
      if (!alive) return;
      if (!showFieldErrors(err, { name, scopes: scope })) {
        formError.textContent = err.message;
        formError.hidden = false;
      }
    } finally {
      submit.disabled = false;
    }
  }

  function row(k) {
    const label = keyName(k.id, k.name);
    const revoke = k.revoked_at
      ? null
      : h(
          "button",
          {
            type: "button",
            class: "button button-small button-danger",
            "aria-label": `Revoke ${label}`,
            onclick: async () => {
              const v = await ask({
                title: `Revoke ${label}?`,
                body: [h("p", null, "Everything using this key stops working at once, boards signed in with it too.")],
                choices: [
                  { value: null, label: "Keep it", kind: "quiet" },
                  { value: "revoke", label: "Revoke", kind: "danger" },
                ],
                act: () => adminApi.revokeKey(k.id),
              });
              if (v) load();
            },
          },
          "Revoke",
        );
    return h(
      "tr",
      { dataset: { keyId: k.id } },
      h("td", null, label),
      h("td", null, h("code", null, k.prefix)),
      h("td", null, (k.scopes || []).join(", ")),
      h("td", null, when(k.created_at)),
      h("td", null, k.last_used_at ? when(k.last_used_at) : "Never"),
      h("td", null, keyStatus(k)),
      h("td", { class: "actions" }, revoke),
    );
  }

  async function load() {
    try {
      const out = await adminApi.listKeys();
      if (!alive) return;
      const keys = out.keys || [];
      replace(tbody, keys.length ? keys.map(row) : h("tr", null, h("td", { colspan: 7, class: "empty" }, "No keys.")));
      status.textContent = "";
    } catch (err) {
      if (!alive) return;
      status.textContent = `Could not load keys: ${err.message}`;
    }
  }

  replace(
    main,
    h(
      "section",
      { class: "page" },
      h("div", { class: "page-head" }, h("div", { class: "page-title" }, h("h1", null, "API keys"))),
      h(
        "form",
        { class: "card admin-form", id: "key-form", novalidate: true, onsubmit: onSubmit, "aria-labelledby": "key-form-title" },
        h("h2", { id: "key-form-title" }, "Create a key"),
        name.el,
        scope.el,
        formError,
        submit,
      ),
      secret,
      status,
      h(
        "table",
        { class: "roster-table", id: "keys-table" },
        h("caption", { class: "sr-only" }, "API keys"),
        h(
          "thead",
          null,
          h("tr", null, ["Name", "Prefix", "Scopes", "Created", "Last used", "Status", "Actions"].map((c) => h("th", { scope: "col" }, c))),
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
