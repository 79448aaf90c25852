// Sign-in: people with email and password (signin-user.js), machines'
// owners with an API key. The key is posted once; the server answers with
// an HttpOnly session cookie, so the page never stores the key.
import { api } from "./api.js";
import { h, replace } from "./dom.js";
import { userForm } from "./signin-user.js";

/** render shows the sign-in form; ctx.signedIn(session) continues. */
export function render(main, ctx) {
  let alive = true;
  const user = userForm(ctx, () => alive);
  const key = h("input", {
    id: "key",
    name: "key",
    type: "password",
    required: true,
    autocomplete: "off",
    spellcheck: "false",
    placeholder: "cc_…",
    "aria-describedby": "key-help key-error",
  });
  const error = h("p", { class: "form-error", id: "key-error", role: "alert", hidden: true });
  const submit = h("button", { type: "submit", class: "button button-primary button-block", id: "signin-submit" }, "Sign in");

  async function onSubmit(e) {
    e.preventDefault();
    error.hidden = true;
    key.removeAttribute("aria-invalid");
    const value = key.value.trim();
    if (!value) {
      error.textContent = "Enter an API key.";
      error.hidden = false;
      key.setAttribute("aria-invalid", "true");
      key.focus();
      return;
    }
    submit.disabled = true;
    try {
      await api.signIn(value);
      const session = await api.session();
      if (!alive) return;
      key.value = "";
      ctx.signedIn(session);
    } catch (err) {
      if (!alive) return;
      error.textContent = err.status === 401 ? "That key was not accepted. Check it and try again." : err.message;
      error.hidden = false;
      if (err.status === 401) key.setAttribute("aria-invalid", "true");
      key.select();
    } finally {
      submit.disabled = false;
    }
  }

  replace(
    main,
    h(
      "section",
      { class: "page page-signin" },
      user.form,
      h(
        "form",
        { class: "card signin", id: "signin-form", novalidate: true, onsubmit: onSubmit },
        h("h2", null, "Or use an API key"),
        h(
          "div",
          { class: "field" },
          h("label", { for: "key" }, "API key"),
          key,
          h(
            "p",
            { class: "help", id: "key-help" },
            "Use a key from ",
            h("code", null, "crewcast keys create"),
            " or the admin key that ",
            h("code", null, "crewcast demo"),
            " printed.",
          ),
          error,
        ),
        submit,
      ),
    ),
  );
  user.focus();
  return () => {
    alive = false;
  };
}
