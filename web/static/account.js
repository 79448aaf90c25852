// The Account page (#/account): who you are, change your password, sign
// out everywhere. A user who signed in with a one-time or reset password
// lands here first and must choose a new password before anything else
// (the server refuses every other call with 403 password_change_required).
import { api, request } from "./api.js";
import { h, replace } from "./dom.js";
import { field, showFieldErrors } from "./admin.js";
import { toast } from "./ui.js";

const minLen = 12;

/** render shows the account page in main and returns a cleanup function. */
export function render(main, ctx) {
  let alive = true;
  const s = ctx.session || {};
  const forced = !!s.must_change_password;
  const isUser = !!s.user_id;
  const parts = [h("h1", null, forced ? "Choose a new password" : "Account")];
  if (forced) {
    parts.push(
      h("p", { id: "must-change", class: "banner banner-warn" },
        "You signed in with a one-time password. Choose your own password to continue."),
    );
  }
  parts.push(identity(s));
  if (isUser) {
    parts.push(passwordForm(ctx, forced, () => alive));
    parts.push(everywhere(ctx, () => alive));
  } else {
    parts.push(h("p", { class: "muted" }, "You are signed in with an API key: it has no password. Sign out with the button at the top."));
  }
  replace(main, h("section", { class: "page page-account" }, ...parts));
  if (forced) main.querySelector("#current-password")?.focus();
  return () => {
    alive = false;
  };
}

function identity(s) {
  const rows = s.user_id
    ? [["Name", s.name], ["Email", s.email], ["Role", s.role]]
    : [["API key", s.name || s.key_id], ["Scopes", (s.scopes || []).join(", ")]];
  return h(
    "dl",
    { class: "card account-identity", id: "account-identity" },
    ...rows.flatMap(([k, v]) => [h("dt", null, k), h("dd", null, v || "—")]),
  );
}

function passwordForm(ctx, forced, isAlive) {
  const pw = (id, label, autocomplete, help) =>
    field(id, label, h("input", { type: "password", name: id, autocomplete, required: true }), help);
  const current = pw("current-password", forced ? "One-time password" : "Current password", "current-password");
  const next = pw("new-password", "New password", "new-password", `At least ${minLen} characters.`);
  const again = pw("confirm-password", "New password again", "new-password");
  const error = h("p", { class: "form-error", id: "password-error", role: "alert", hidden: true });
  const submit = h("button", { type: "submit", class: "button button-primary", id: "password-submit" },
    forced ? "Set password and continue" : "Change password");

  function check() {
    for (const f of [current, next, again]) f.setError("");
    if (!current.input.value) return [current, forced ? "Enter the one-time password you signed in with." : "Enter your current password."];
    if ([...next.input.value].length < minLen) return [next, `At least ${minLen} characters.`];
    if (next.input.value === current.input.value) return [next, "Choose a password different from the current one."];
    if (again.input.value !== next.input.value) return [again, "The two new passwords differ."];
    return null;
  }

  async function onSubmit(e) {
    e.preventDefault();
    error.hidden = true;
    const bad = check();
    if (bad) {
      bad[0].setError(bad[1]);
      bad[0].input.focus();
      return;
    }
    submit.disabled = true;
    try {
      await request("POST", "/v1/account/password", { current: current.input.value, new: next.input.value });
      if (!isAlive()) return;
      for (const f of [current, next, again]) f.input.value = "";
      toast("Password changed. Your other sessions were signed out.");
      const s = await api.session();
      if (!isAlive()) return;
      if (forced) ctx.signedIn(s);
    } catch (err) {
      if (!isAlive()) return;
      if (err.status === 400 && showFieldErrors(err, { current: current, new: next })) return;
      error.textContent = err.status === 429 ? "Too many attempts. Wait a minute, then try again." : err.message;
      error.hidden = false;
    } finally {
      submit.disabled = false;
    }
  }

  return h(
    "form",
    { class: "card account-password", id: "password-form", novalidate: true, onsubmit: onSubmit },
    h("h2", null, forced ? "Your password" : "Change password"),
    current.el,
    next.el,
    again.el,
    error,
    submit,
  );
}

function everywhere(ctx, isAlive) {
  const button = h("button", { type: "button", class: "button", id: "signout-everywhere" }, "Sign out everywhere");
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      await request("DELETE", "/v1/account/sessions");
      if (!isAlive()) return;
      toast("Signed out on every device.");
      ctx.signedOut();
    } catch (err) {
      if (isAlive()) toast(`Cannot sign out everywhere: ${err.message}`, "error");
    } finally {
      button.disabled = false;
    }
  });
  return h(
    "section",
    { class: "card account-sessions", "aria-labelledby": "sessions-title" },
    h("h2", { id: "sessions-title" }, "Sessions"),
    h("p", { class: "muted" }, "Signs you out on every browser and device, this one too."),
    button,
  );
}
