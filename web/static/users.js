// The users page (admin): add people, change their role, reset their
// password (a one-time password is shown once), disable or enable them.
import { h, replace } from "./dom.js";
import { ask, toast, copyButton } from "./ui.js";
import { adminApi, field, showFieldErrors, when, isAdmin, notAllowed } from "./admin.js";

const ROLES = [
  ["viewer", "Viewer — reads groups and reports"],
  ["dispatcher", "Dispatcher — also sends, resolves, retries, cancels"],
  ["admin", "Admin — everything, users and keys too"],
];

function roleSelect(value, attrs, short) {
  return h(
    "select",
    attrs,
    ROLES.map(([v, label]) => h("option", { value: v, selected: v === value }, short ? v : label)),
  );
}

/** render shows the users page and returns a cleanup function. */
export function render(main, ctx) {
  if (!isAdmin(ctx.session)) {
    replace(main, notAllowed());
    return () => {};
  }
  let alive = true;
  const email = field("user-email", "Email", h("input", { type: "email", autocomplete: "off", required: true }), "They sign in with it.");
  const name = field("user-name", "Name", h("input", { type: "text", autocomplete: "off", required: true, maxlength: 100 }), "Shown on the board and in the audit trail.");
  const role = field("user-role", "Role", roleSelect("dispatcher", {}));
  const fields = { email, name, role };
  const formError = h("p", { class: "form-error", id: "user-form-error", role: "alert", hidden: true });
  const secret = h("div", { id: "one-time", class: "card one-time", role: "status", hidden: true });
  const submit = h("button", { type: "submit", class: "button button-primary", id: "user-submit" }, "Add user");
  const tbody = h("tbody", { id: "user-rows" });
  const status = h("p", { class: "list-status", role: "status" });

  function showPassword(u, pw, what) {
    const value = h("code", { class: "one-time-password", id: "one-time-password" }, pw);
    replace(
      secret,
      h("p", null, `${what} for ${u.name} (${u.email}). Give them this one-time password; it is shown only now:`),
      h("p", { class: "one-time-value" }, value, copyButton(() => pw, value, "Copy password")),
    );
    secret.hidden = false;
  }

  async function onSubmit(e) {
    e.preventDefault();
    formError.hidden = true;
    for (const f of Object.values(fields)) f.setError("");
    let bad = false;
    if (!email.input.value.trim()) {
      email.setError("Enter an email address.");
      bad = true;
    }
    if (!name.input.value.trim()) {
      name.setError("Enter a name.");
      bad = true;
    }
    if (bad) {
      (email.input.value.trim() ? name : email).input.focus();
      return;
    }
    submit.disabled = true;
    try {
      const u = await adminApi.createUser({
        email: email.input.value.trim(),
        name: name.input.value.trim(),
        role: role.input.value,
      });
      if (!alive) return;
      showPassword(u, u.password, "Added");
      email.input.value = "";
      name.input.value = "";
      await load();
    } catch (err) {
      if (!alive) return;
      if (err.status === 409) {
        email.setError("Someone already has this email.");
        email.input.focus();
      } else if (!showFieldErrors(err, fields)) {
        formError.textContent = err.message;
        formError.hidden = false;
      }
    } finally {
      submit.disabled = false;
    }
  }

  function row(u) {
    const disabled = !!u.disabled_at;
    const self = ctx.session.user_id === u.id;
    const sel = roleSelect(u.role, {
      "aria-label": `Role of ${u.name}`,
      disabled: self,
      onchange: async (e) => {
        try {
          await adminApi.updateUser(u.id, { role: e.target.value });
          toast(`${u.name} is now ${e.target.value}.`);
          load();
        } catch (err) {
          toast(`Could not change the role: ${err.message}`, "error");
          e.target.value = u.role;
        }
      },
    }, true);
    const reset = h(
      "button",
      {
        type: "button",
        class: "button button-small",
        "aria-label": `Reset the password of ${u.name}`,
        onclick: () =>
          ask({
            title: `Reset the password of ${u.name}?`,
            body: [h("p", null, "They are signed out everywhere and need the new one-time password to sign in.")],
            choices: [
              { value: null, label: "Keep it", kind: "quiet" },
              { value: "reset", label: "Reset password", kind: "danger" },
            ],
            act: async () => {
              const out = await adminApi.updateUser(u.id, { reset_password: true });
              showPassword(out, out.password, "New password");
            },
          }),
      },
      "Reset password",
    );
    const toggle = h(
      "button",
      {
        type: "button",
        class: `button button-small ${disabled ? "" : "button-danger"}`,
        "aria-label": `${disabled ? "Enable" : "Disable"} ${u.name}`,
        hidden: self,
        onclick: async () => {
          if (disabled) {
            try {
              await adminApi.updateUser(u.id, { disabled: false });
              load();
            } catch (err) {
              toast(err.message, "error");
            }
            return;
          }
          const v = await ask({
            title: `Disable ${u.name}?`,
            body: [h("p", null, "They are signed out everywhere and cannot sign in until enabled again.")],
            choices: [
              { value: null, label: "Keep them", kind: "quiet" },
              { value: "disable", label: "Disable", kind: "danger" },
            ],
            act: () => adminApi.disableUser(u.id),
          });
          if (v) load();
        },
      },
      disabled ? "Enable" : "Disable",
    );
    return h(
      "tr",
      { dataset: { userId: u.id, email: u.email } },
      h("td", null, u.name, self ? h("span", { class: "muted" }, " (you)") : null),
      h("td", null, u.email),
      h("td", null, sel),
      h("td", null, disabled ? `Disabled ${when(u.disabled_at)}` : "Active"),
      h("td", null, when(u.created_at)),
      h("td", { class: "actions" }, reset, " ", toggle),
    );
  }

  async function load() {
    try {
      const out = await adminApi.listUsers();
      if (!alive) return;
      const users = out.users || [];
      replace(tbody, users.length ? users.map(row) : h("tr", null, h("td", { colspan: 6, class: "empty" }, "No users yet.")));
      status.textContent = "";
    } catch (err) {
      if (!alive) return;
      status.textContent = `Could not load users: ${err.message}`;
    }
  }

  replace(
    main,
    h(
      "section",
      { class: "page" },
      h("div", { class: "page-head" }, h("div", { class: "page-title" }, h("h1", null, "Users"))),
      h(
        "form",
        { class: "card admin-form", id: "user-form", novalidate: true, onsubmit: onSubmit, "aria-labelledby": "user-form-title" },
        h("h2", { id: "user-form-title" }, "Add a user"),
        email.el,
        name.el,
        role.el,
        formError,
        submit,
      ),
      secret,
      status,
      h(
        "table",
        { class: "roster-table", id: "users-table" },
        h("caption", { class: "sr-only" }, "Users"),
        h(
          "thead",
          null,
          h("tr", null, ["Name", "Email", "Role", "Status", "Created", "Actions"].map((c) => h("th", { scope: "col" }, c))),
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
