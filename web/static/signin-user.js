// Sign-in with email and password (docs/design.md §14). The password is posted
// once; the server answers with an HttpOnly session cookie. Every failure
// reads the same, as the server's answer does.
import { api } from "./api.js";
import { h } from "./dom.js";
import { adminApi, field } from "./admin.js";

/** userForm builds the email/password form; isAlive() guards late answers. */
export function userForm(ctx, isAlive) {
  const email = field("email", "Email", h("input", { type: "email", name: "email", autocomplete: "username", required: true }));
  const password = field(
    "password",
    "Password",
    h("input", { type: "password", name: "password", autocomplete: "current-password", required: true }),
  );
  const error = h("p", { class: "form-error", id: "user-signin-error", role: "alert", hidden: true });
  const submit = h("button", { type: "submit", class: "button button-primary button-block", id: "user-signin-submit" }, "Sign in");

  async function onSubmit(e) {
    e.preventDefault();
    error.hidden = true;
    email.setError("");
    password.setError("");
    if (!email.input.value.trim()) {
      email.setError("Enter your email address.");
      email.input.focus();
      return;
    }
    if (!password.input.value) {
      password.setError("Enter your password.");
      password.input.focus();
      return;
    }
    submit.disabled = true;
    try {
      await adminApi.signInPassword(email.input.value.trim(), password.input.value);
      const session = await api.session();
      if (!isAlive()) return;
      password.input.value = "";
      ctx.signedIn(session);
    } catch (err) {
      if (!isAlive()) return;
      error.textContent =
        err.status === 401
          ? "Wrong email or password."
          : err.status === 429
            ? "Too many attempts. Wait a minute, then try again."
            : err.message;
      error.hidden = false;
      password.input.select();
    } finally {
      submit.disabled = false;
    }
  }

  const form = h(
    "form",
    { class: "card signin", id: "user-signin-form", novalidate: true, onsubmit: onSubmit },
    h("h1", null, "Sign in"),
    h("p", { class: "muted" }, "See who has the message, who answered, and who still needs a nudge."),
    email.el,
    password.el,
    error,
    submit,
  );
  return { form, focus: () => email.input.focus() };
}
