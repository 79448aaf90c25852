// The audit page (admin): who did what, when, from where, in words
// (auditwords.js), with filters and a CSV download of the same selection
// (the CSV keeps the raw codes).
import { h, replace } from "./dom.js";
import { api } from "./api.js";
import { adminApi, field, when, isAdmin, notAllowed } from "./admin.js";
import { actionCodes, actionLabel, sentence, fillGroups } from "./auditwords.js";

/** toRFC3339 turns a datetime-local value (local time) into RFC 3339, or "". */
function toRFC3339(v) {
  if (!v) return "";
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}

/** render shows the audit page and returns a cleanup function. */
export function render(main, ctx) {
  if (!isAdmin(ctx.session)) {
    replace(main, notAllowed());
    return () => {};
  }
  let alive = true;
  let cursor = "";
  let query = {};
  const groups = new Map(); // group id → the lookup of its title and size
  const since = field("audit-since", "From", h("input", { type: "datetime-local" }));
  const until = field("audit-until", "Until", h("input", { type: "datetime-local" }));
  const actor = field("audit-actor", "Who (user or key ID)", h("input", { type: "text", autocomplete: "off" }));
  const action = field(
    "audit-action",
    "Action",
    h("select", null, h("option", { value: "" }, "Any action"), actionCodes.map((a) => h("option", { value: a, title: a }, actionLabel(a)))),
  );
  const csv = h("a", { class: "button", id: "audit-csv", href: adminApi.auditCSVURL({}), download: "audit.csv" }, "Download CSV");
  const tbody = h("tbody", { id: "audit-rows" });
  const status = h("p", { class: "list-status", role: "status" });
  const more = h("button", { type: "button", class: "button", hidden: true, onclick: () => load(false) }, "Load more");

  function row(e) {
    return h(
      "tr",
      { dataset: { action: e.action } },
      h("td", null, h("time", { datetime: e.at }, when(e.at))),
      h("td", null, sentence(e)),
      h("td", null, e.ip || "—"),
    );
  }

  async function load(first) {
    try {
      const out = await adminApi.audit({ ...query, cursor: first ? "" : cursor, limit: 100 });
      if (!alive) return;
      const rows = (out.entries || []).map(row);
      if (first) replace(tbody, rows.length ? rows : h("tr", null, h("td", { colspan: 3, class: "empty" }, "Nothing matches.")));
      else tbody.append(...rows);
      fillGroups(tbody, api.group, groups);
      cursor = out.next_cursor || "";
      more.hidden = !cursor;
      status.textContent = first ? `${rows.length}${cursor ? "+" : ""} entries` : "";
    } catch (err) {
      if (!alive) return;
      status.textContent = `Could not load the audit trail: ${err.message}`;
    }
  }

  function onSubmit(e) {
    e.preventDefault();
    since.setError("");
    until.setError("");
    const s = toRFC3339(since.input.value);
    const u = toRFC3339(until.input.value);
    if (s === null) return since.setError("Enter a date and time.");
    if (u === null) return until.setError("Enter a date and time.");
    if (s && u && u <= s) {
      until.setError("Must be after From.");
      until.input.focus();
      return;
    }
    query = { since: s, until: u, actor: actor.input.value.trim(), action: action.input.value };
    csv.href = adminApi.auditCSVURL(query);
    load(true);
  }

  replace(
    main,
    h(
      "section",
      { class: "page" },
      h("div", { class: "page-head" }, h("div", { class: "page-title" }, h("h1", null, "Audit trail")), csv),
      h(
        "form",
        { class: "card admin-form audit-filters", id: "audit-form", novalidate: true, onsubmit: onSubmit, "aria-label": "Filter the audit trail" },
        since.el,
        until.el,
        actor.el,
        action.el,
        h("button", { type: "submit", class: "button button-primary", id: "audit-filter" }, "Filter"),
      ),
      status,
      h(
        "table",
        { class: "roster-table", id: "audit-table" },
        h("caption", { class: "sr-only" }, "Audit trail, newest first"),
        h("thead", null, h("tr", null, ["When", "What happened", "Address"].map((c) => h("th", { scope: "col" }, c)))),
        tbody,
      ),
      h("div", { class: "list-more" }, more),
    ),
  );
  load(true);
  return () => {
    alive = false;
  };
}
