// Shared pieces of the admin pages (users, API keys, audit, senders): their API
// calls and an accessible form field. Kept apart from api.js so the other
// pages' client stays as it was.
import { request } from "./api.js";
import { h } from "./dom.js";
import { fmtDate } from "./format.js";

const enc = encodeURIComponent;

/** The admin calls, one function per route (docs/design.md §14). */
export const adminApi = {
  signInPassword: (email, password) => request("POST", "/v1/session", { email, password }),
  listUsers: () => request("GET", "/v1/users"),
  createUser: (body) => request("POST", "/v1/users", body),
  updateUser: (id, body) => request("PATCH", `/v1/users/${enc(id)}`, body),
  disableUser: (id) => request("DELETE", `/v1/users/${enc(id)}`),
  listKeys: () => request("GET", "/v1/keys"),
  createKey: (name, scopes) => request("POST", "/v1/keys", { name, scopes }),
  revokeKey: (id) => request("DELETE", `/v1/keys/${enc(id)}`),
  listSenders: () => request("GET", "/v1/senders"),
  listProviders: () => request("GET", "/v1/providers"),
  createSender: (body) => request("POST", "/v1/senders", body),
  deleteSender: (number) => request("DELETE", `/v1/senders/${enc(number)}`),
  audit: (q) => request("GET", `/v1/audit?${auditQuery(q)}`),
  auditCSVURL: (q) => `/v1/audit?${auditQuery(q)}&format=csv`,
};

/** auditQuery turns the audit filters into a query string. */
export function auditQuery(q) {
  const p = new URLSearchParams();
  for (const k of ["since", "until", "actor", "action", "cursor", "limit"]) {
    if (q && q[k]) p.set(k, q[k]);
  }
  return p.toString();
}

/** isAdmin reports whether a session may use the admin pages. */
export function isAdmin(s) {
  return !!s && (s.scopes || []).includes("admin");
}

/**
 * field builds a labelled input with its help and error texts, wired with
 * aria-describedby; setError(msg) marks it aria-invalid and shows msg
 * ("" clears both).
 */
export function field(id, label, input, help) {
  input.id = id;
  const errId = `${id}-error`;
  const helpEl = help ? h("p", { class: "help", id: `${id}-help` }, help) : null;
  const err = h("p", { class: "field-error", id: errId, role: "alert" });
  input.setAttribute("aria-describedby", [helpEl ? `${id}-help` : "", errId].filter(Boolean).join(" "));
  const el = h("div", { class: "field" }, h("label", { for: id }, label), input, helpEl, err);
  return {
    el,
    input,
    setError(msg) {
      err.textContent = msg || "";
      if (msg) input.setAttribute("aria-invalid", "true");
      else input.removeAttribute("aria-invalid");
    },
  };
}

/** showFieldErrors puts a 400's per-field messages on the fields; returns whether any matched. */
export function showFieldErrors(err, fields) {
  let any = false;
  for (const f of err.fields || []) {
    const target = fields[f.field];
    if (target) {
      target.setError(f.message);
      if (!any) target.input.focus();
      any = true;
    }
  }
  return any;
}

/** when formats an API time for a table cell, in the board's one format (fmtDate). */
export function when(s) {
  if (!s) return "—";
  return fmtDate(s) || s;
}

/** notAllowed is the page shown to a signed-in person without the admin role. */
export function notAllowed() {
  return h(
    "section",
    { class: "page" },
    h("h1", null, "Not allowed"),
    h("p", null, "Only an admin can see this page."),
  );
}
