// Replies and opt-outs: the inbox of replies (#/replies) with the group
// each went to, the opt-out list (#/opt-outs, GET /v1/suppressions) with
// add and lift, and one person's history across groups (#/people/{number},
// GET /v1/reports/recipients/{number}).
import { request } from "./api.js";
import { h, replace } from "./dom.js";
import { fmtTime, fmtFull, statusInfo } from "./format.js";
import { chip, ask } from "./ui.js";
import { firstLine } from "./groups.js";

const enc = encodeURIComponent;

/** personLink links a number to its history across groups. */
export function personLink(number, label = number) {
  return h("a", { class: "person-link mono", href: `#/people/${enc(number)}`, title: `History of ${number} across groups` }, label);
}

const when = (at) => h("time", { datetime: at, title: fmtFull(at) }, fmtTime(at));

function table(label, cols, body) {
  return h(
    "table",
    { class: "directory-table", "aria-label": label },
    h("thead", null, h("tr", null, cols.map((c) => h("th", { scope: "col" }, c)))),
    body,
  );
}

// groupTitles fetches the first line of each group's text, by id.
async function groupTitles(ids) {
  const out = new Map();
  await Promise.all(
    [...new Set(ids.filter(Boolean))].map(async (id) => {
      try {
        const g = await request("GET", `/v1/groups/${enc(id)}?recipients=0`);
        out.set(id, firstLine(g.text, 60));
      } catch {
        out.set(id, id);
      }
    }),
  );
  return out;
}

/** renderReplies shows the replies inbox and returns a cleanup function. */
export function renderReplies(main) {
  let alive = true;
  const list = h("div", { id: "replies-list" }, h("p", { class: "muted" }, "Loading…"));
  const only = h("input", { type: "checkbox", id: "replies-unmatched", onchange: () => load() });
  const possible = h("input", { type: "checkbox", id: "replies-possible", onchange: () => load() });
  const ambiguous = h("input", { type: "checkbox", id: "replies-ambiguous", onchange: () => load() });
  replace(
    main,
    h(
      "section",
      { class: "page" },
      h("h1", null, "Replies"),
      h("p", { class: "help" }, "Every text people sent back, newest first, with the group it answered. A reply that matched no group is kept here too."),
      h("label", { class: "check", for: "replies-unmatched" }, only, " Only replies that matched no group"),
      h("label", { class: "check", for: "replies-possible" }, possible, " Only possible opt-outs (a stop word among other words: yours to decide)"),
      h("label", { class: "check", for: "replies-ambiguous" }, ambiguous, " Only ambiguous answers (several of the person's requests were open)"),
      list,
    ),
  );
  async function load() {
    try {
      const res = await request("GET", `/v1/replies?limit=200${only.checked ? "&unmatched=1" : ""}${ambiguous.checked ? "&ambiguous=1" : ""}`);
      const rows = ((res && res.replies) || []).filter((r) => !possible.checked || r.possible_opt_out);
      const titles = await groupTitles(rows.map((r) => r.group_id));
      if (!alive) return;
      replace(
        list,
        rows.length
          ? table(
              "Replies",
              ["From", "Reply", "Group", "Received"],
              h(
                "tbody",
                { id: "replies-body" },
                rows.map((r) =>
                  h(
                    "tr",
                    { class: "reply", dataset: { number: r.number } },
                    h("td", null, personLink(r.number)),
                    h("td", { class: "reply-text" }, r.text || (r.media.length ? "(media)" : ""), r.possible_opt_out ? possibleOptOut(r.number) : null, r.ambiguous ? ambiguousNote() : null),
                    h("td", null, r.group_id ? h("a", { class: "group-link", href: `#/groups/${enc(r.group_id)}` }, titles.get(r.group_id)) : h("span", { class: "muted" }, "No group (unmatched)")),
                    h("td", null, when(r.received_at)),
                  ),
                ),
              ),
            )
          : h("p", { class: "muted" }, only.checked ? "No unmatched replies." : "No replies yet."),
      );
    } catch (e) {
      if (alive) replace(list, h("p", { class: "form-error" }, `Could not load replies: ${e.message}`));
    }
  }
  load();
  return () => {
    alive = false;
  };
}

// ambiguousNote marks a bare answer given while several of the person's
// requests were open (docs/design.md §15): applied to none; crewcast sent
// them one message listing their requests and codes.
function ambiguousNote() {
  return h("div", { class: "ambiguous-reply" }, h("strong", null, "Ambiguous"), " — several of their requests were open: applied to none; they were sent their reply codes");
}

// possibleOptOut marks a reply that may be a request to stop and offers to
// opt the number out in one click (POST /v1/suppressions, audited as the
// signed-in person); it is not one until someone decides.
function possibleOptOut(number) {
  const status = h("span", { class: "muted", role: "status" });
  const button = h("button", { type: "button", class: "button button-small optout-now", onclick: optOut }, `Opt out ${number}`);
  async function optOut() {
    button.disabled = true;
    try {
      await request("POST", "/v1/suppressions", { number, reason: "manual" });
      button.remove();
      status.textContent = "Opted out";
    } catch (e) {
      button.disabled = false;
      status.textContent = `Could not opt out: ${e.message}`;
    }
  }
  return h("div", { class: "possible-opt-out" }, h("strong", null, "Possible opt-out"), " ", button, " ", status);
}

const REASONS = { stop: "Texted STOP", manual: "Added by hand", provider_opt_out: "Opted out at the provider" };

/** renderOptOuts shows the opt-out list with add and lift. */
export function renderOptOuts(main, ctx) {
  let alive = true;
  const list = h("div", { id: "optouts-list" }, h("p", { class: "muted" }, "Loading…"));
  const number = h("input", { id: "optout-number", type: "tel", autocomplete: "off", placeholder: "+15550100000", "aria-describedby": "optout-help optout-error" });
  const error = h("div", { class: "field-error", id: "optout-error" });
  const status = h("p", { class: "form-status", role: "status", id: "optout-status" });
  const form = h(
    "form",
    { class: "card", id: "optout-form", novalidate: true, "aria-labelledby": "optout-form-title", onsubmit: onAdd },
    h("h2", { id: "optout-form-title" }, "Add an opt-out"),
    h("div", { class: "field" }, h("label", { for: "optout-number" }, "Number"), h("p", { class: "help", id: "optout-help" }, "Nobody texts this number until the opt-out is lifted or the person texts START."), number, error),
    status,
    h("div", { class: "form-actions" }, h("button", { type: "submit", class: "button button-primary", id: "optout-save" }, "Add opt-out")),
  );
  replace(main, h("section", { class: "page" }, h("h1", null, "Opt-outs"), list, ctx.canSend ? form : null));

  async function load() {
    try {
      const res = await request("GET", "/v1/suppressions?limit=1000");
      if (!alive) return;
      const rows = (res && res.suppressions) || [];
      replace(
        list,
        rows.length
          ? table(
              "Opt-outs",
              ["Number", "Why", "Since", "Actions"],
              h(
                "tbody",
                { id: "optouts-body" },
                rows.map((s) =>
                  h(
                    "tr",
                    { dataset: { number: s.number } },
                    h("td", null, personLink(s.number)),
                    h("td", null, REASONS[s.reason] || s.reason, h("span", { class: "muted small" }, ` (${s.reason})`)),
                    h("td", null, when(s.created_at)),
                    h("td", { class: "row-actions" }, ctx.canSend ? h("button", { type: "button", class: "button button-small optout-lift", "aria-label": `Lift the opt-out of ${s.number}`, onclick: () => lift(s) }, "Lift") : null),
                  ),
                ),
              ),
            )
          : h("p", { class: "muted" }, "Nobody has opted out."),
      );
    } catch (e) {
      if (alive) replace(list, h("p", { class: "form-error" }, `Could not load opt-outs: ${e.message}`));
    }
  }

  function lift(s) {
    ask({
      title: `Lift the opt-out of ${s.number}?`,
      body: h("p", null, s.reason === "stop" ? "They texted STOP. Lift it only if they asked to be texted again (texting START does this too)." : "They will be texted again by new groups."),
      choices: [
        { value: null, label: "Keep it" },
        { value: "lift", label: "Lift opt-out", kind: "danger" },
      ],
      act: async () => {
        await request("DELETE", `/v1/suppressions/${enc(s.number)}`);
        status.textContent = `Lifted the opt-out of ${s.number}.`;
        load();
      },
    });
  }

  async function onAdd(e) {
    e.preventDefault();
    error.textContent = status.textContent = "";
    number.removeAttribute("aria-invalid");
    try {
      const s = await request("POST", "/v1/suppressions", { number: number.value.trim(), reason: "manual" });
      if (!alive) return;
      number.value = "";
      status.textContent = `${s.number} will not be texted.`;
      load();
    } catch (err) {
      if (!alive) return;
      const f = (err.fields || [])[0];
      error.textContent = f ? f.message : err.message;
      number.setAttribute("aria-invalid", "true");
      number.focus();
    }
  }

  load();
  return () => {
    alive = false;
  };
}

/** renderPerson shows one person's deliveries across groups. */
export function renderPerson(main, ctx, number) {
  let alive = true;
  const state = h("p", { id: "person-status" }, "Loading…");
  const list = h("div", { id: "person-list" });
  replace(main, h("section", { class: "page" }, h("a", { class: "back", href: "#/groups" }, "← All groups"), h("h1", { class: "mono" }, number), state, list));
  (async () => {
    try {
      const res = await request("GET", `/v1/reports/recipients/${enc(number)}?limit=500`);
      const rows = (res && res.deliveries) || [];
      if (!alive) return;
      const s = res.suppression;
      // The person's standing first; the group titles take one read each.
      state.textContent = s ? `Opted out (${REASONS[s.reason] || s.reason}) since ${fmtFull(s.created_at)}.` : `Not opted out · in ${rows.length} group${rows.length === 1 ? "" : "s"}.`;
      const titles = await groupTitles(rows.map((d) => d.group_id));
      if (!alive) return;
      replace(
        list,
        rows.length
          ? table(
              `History of ${number}`,
              ["Group", "Status", "Reply", "Updated"],
              h(
                "tbody",
                { id: "person-body" },
                rows.map((d) =>
                  h(
                    "tr",
                    { dataset: { groupId: d.group_id } },
                    h("td", null, h("a", { href: `#/groups/${enc(d.group_id)}` }, titles.get(d.group_id))),
                    h("td", null, chip(d.status), h("span", { class: "sr-only" }, statusInfo(d.status).hint || "")),
                    h("td", null, d.reply_text || "—"),
                    h("td", null, when(d.updated_at)),
                  ),
                ),
              ),
            )
          : h("p", { class: "muted" }, "No group has texted this number."),
      );
    } catch (e) {
      if (alive) state.textContent = `Could not load this person: ${e.message}`;
    }
  })();
  return () => {
    alive = false;
  };
}
