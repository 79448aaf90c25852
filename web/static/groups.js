// The list of groups with live counters.
import { api } from "./api.js";
import { h, replace, coalesce } from "./dom.js";
import { tally, summaryLine, plural, fmtShort, fmtFull, groupStatusInfo, scheduledAt, fmtSchedule, scheduledSummary } from "./format.js";
import { groupChip, progressBar, live, liveBadge, setLiveBadge, ask, toast } from "./ui.js";
import * as announce from "./announce.js";
import * as focus from "./focus.js";
import { hasAnswers, answersLine } from "./answers.js";

const MODE_LABEL = { individual: "Individual", group_mms: "Group MMS" };

/**
 * placeholders shows a template as people read it, each variable as a
 * placeholder: "Hi {{first_name}}" → "Hi ‹first name›", "{{fields.site |
 * default "x"}}" → "‹site›". Text without variables is unchanged.
 */
export function placeholders(text) {
  return String(text || "").replace(/\{\{([^}]*)\}\}/g, (all, inner) => {
    const v = inner.split("|", 1)[0].trim().replace(/^fields\./, "");
    return v ? `‹${v.replace(/[_-]+/g, " ")}›` : all;
  });
}

/** firstLine is a short title for a group: the first line of its text,
 * a template's variables shown as placeholders. */
export function firstLine(text, max = 90) {
  const line = placeholders((text || "").split("\n", 1)[0]).trim();
  return line.length > max ? line.slice(0, max - 1) + "…" : line || "(no text)";
}

function card(g, ctx, onCancel) {
  const t = tally(g.counts);
  const at = scheduledAt(g);
  // The same three numbers as the group page's Yes, No and Replied tiles;
  // a group with options shows its option counts instead.
  const extras = [];
  if (!hasAnswers(g)) {
    if (t.ackYes) extras.push(`${t.ackYes} yes`);
    if (t.ackNo) extras.push(`${t.ackNo} no`);
    if (t.repliedOther) extras.push(`${t.repliedOther} replied`);
  }
  // Only the title is the link (its name is short; the whole card is
  // clickable through CSS): a link wrapping the card would read every
  // number on it, twice counting the progress bar's text.
  return h(
    "li",
    { class: "group-card", dataset: { groupId: g.id, focusRow: g.id } },
    h(
      "div",
      { class: "card-top" },
      groupChip(g.status, g.counts, !!at),
      h("time", { class: "card-time", datetime: g.created_at, title: fmtFull(g.created_at) }, fmtShort(g.created_at)),
    ),
    h(
      "h2",
      { class: "card-text" },
      h("a", { class: "card-link", href: `#/groups/${encodeURIComponent(g.id)}`, dataset: { focusKey: "open" } }, firstLine(g.text)),
    ),
    h("p", { class: "card-meta" }, `From ${g.from} · ${MODE_LABEL[g.mode] || g.mode} · ${plural(t.total, "recipient")}`),
    at ? h("p", { class: "card-schedule" }, `Scheduled for ${fmtSchedule(g.send_at)}`) : null,
    progressBar(t, "Delivery progress"),
    h(
      "p",
      { class: "card-summary" },
      h("span", { class: "summary-main" }, at ? scheduledSummary(t) : summaryLine(t)),
      extras.length ? h("span", { class: "summary-extra" }, extras.join(" · ")) : null,
    ),
    hasAnswers(g) ? h("p", { class: "card-answers" }, answersLine(g)) : null,
    g.status === "paused" && g.pause_reason ? h("p", { class: "card-warn" }, `Paused: ${g.pause_reason}`) : null,
    at && ctx.canSend
      ? h(
          "div",
          { class: "card-actions" },
          h("button", { type: "button", class: "button button-small button-danger card-cancel", dataset: { focusKey: "cancel" }, onclick: () => onCancel(g) }, "Cancel", h("span", { class: "sr-only" }, ` scheduled group: ${firstLine(g.text, 60)}`)),
        )
      : null,
  );
}

const STATUS_CHOICES = [
  ["", "Any status"],
  ["sending", "Sending"],
  ["awaiting", "Awaiting receipts"],
  ["complete", "Complete"],
  ["paused", "Paused"],
  ["canceled", "Canceled"],
];

/** dayStart turns a date input's value ("2026-03-01") into RFC 3339 for
 * the start of that day in the viewer's zone, days later; "" for none. */
function dayStart(v, days = 0) {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(v || "");
  return m ? new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]) + days).toISOString() : "";
}

/** searchForm is the list's search: text, status, sender and a date
 * range; onSearch gets the API filters whenever they are submitted. */
function searchForm(onSearch) {
  const input = (id, label, attrs) => {
    const el = h("input", { id, name: id, autocomplete: "off", ...attrs });
    return [el, h("div", { class: "field" }, h("label", { for: id }, label), el)];
  };
  const [q, qField] = input("groups-q", "Text", { type: "search", maxlength: 200 });
  const [from, fromField] = input("groups-from", "From number", { type: "tel", placeholder: "+15550100000" });
  const [since, sinceField] = input("groups-since", "Sent on or after", { type: "date" });
  const [until, untilField] = input("groups-until", "Sent on or before", { type: "date" });
  const status = h("select", { id: "groups-status", name: "groups-status" }, STATUS_CHOICES.map(([v, l]) => h("option", { value: v }, l)));
  const error = h("p", { class: "form-error", id: "groups-search-error", role: "alert" });
  const submit = (e) => {
    e.preventDefault();
    error.textContent = "";
    if (since.value && until.value && until.value < since.value) {
      error.textContent = "The end date is before the start date.";
      until.focus();
      return;
    }
    onSearch({ q: q.value.trim(), status: status.value, from: from.value.trim(), since: dayStart(since.value), until: dayStart(until.value, 1) });
  };
  const clear = () => {
    for (const el of [q, from, since, until]) el.value = "";
    status.value = "";
    error.textContent = "";
    onSearch({});
  };
  return h(
    "form",
    { class: "group-search", id: "group-search", role: "search", "aria-label": "Search group messages", onsubmit: submit },
    qField,
    h("div", { class: "field" }, h("label", { for: "groups-status" }, "Status"), status),
    fromField,
    sinceField,
    untilField,
    h("div", { class: "form-actions" }, h("button", { type: "submit", class: "button button-primary" }, "Search"), h("button", { type: "button", class: "button", id: "groups-clear", onclick: clear }, "Clear")),
    error,
  );
}

/** render shows the group list in main and returns a cleanup function. */
export function render(main, ctx) {
  let alive = true;
  let order = []; // ids in display order
  const byId = new Map();
  let cursor = "";
  let loading = false;
  let again = false; // a refresh arrived while a load was running
  let filters = {}; // the search in force; live refreshes keep it
  let gen = 0; // bumped by a new search: a load for an older one is dropped

  const badge = liveBadge();
  // Not a live region: a refresh would read every card. New groups and
  // status changes are announced as events instead (announce.js).
  const list = h("ul", { class: "group-list", id: "group-list" });
  const cards = new Map(); // id → {key, li}: unchanged cards are kept, not rebuilt
  let labels = null; // id → status label last seen, for announcements
  const status = h("p", { class: "list-status", role: "status" });
  const more = h("button", { type: "button", class: "button", hidden: true, onclick: () => load(false) }, "Load more");

  replace(
    main,
    h(
      "section",
      { class: "page" },
      h(
        "div",
        { class: "page-head" },
        h("div", { class: "page-title" }, h("h1", null, "Group messages"), badge),
      ),
      searchForm(search),
      status,
      list,
      h("div", { class: "list-more" }, more),
    ),
  );

  const searching = () => Object.values(filters).some(Boolean);

  // search starts over with new filters: the live stream keeps refreshing
  // the first page with them, so new groups that match appear.
  function search(f) {
    filters = f;
    gen++;
    order = [];
    byId.clear();
    cursor = "";
    labels = null;
    if (loading) again = true;
    else load(true);
  }

  function draw() {
    if (order.length === 0) {
      replace(
        list,
        h(
          "li",
          { class: "empty" },
          h("p", null, searching() ? "No group messages match this search." : "No group messages yet."),
          ctx.canSend && !searching() ? h("a", { class: "button button-primary", href: "#/new" }, "Send the first one") : null,
        ),
      );
      return;
    }
    const mem = focus.remember(list);
    const nodes = order.map((id) => {
      const g = byId.get(id);
      const key = JSON.stringify(g);
      let entry = cards.get(id);
      if (!entry || entry.key !== key) {
        entry = { key, li: card(g, ctx, cancelScheduled) };
        cards.set(id, entry);
      }
      return entry.li;
    });
    if (!list.firstChild || !list.firstChild.classList.contains("group-card")) list.replaceChildren();
    let cur = list.firstChild;
    for (const n of nodes) {
      if (n === cur) cur = cur.nextSibling;
      else list.insertBefore(n, cur);
    }
    while (cur) {
      const next = cur.nextSibling;
      list.removeChild(cur);
      cur = next;
    }
    focus.restore(list, mem, ["open"]);
  }

  // announceChanges tells a screen reader about new groups and status
  // changes (not the first load: that is the page itself).
  function announceChanges(first) {
    const now = new Map(order.map((id) => [id, groupStatusInfo(byId.get(id).status, byId.get(id).counts, !!scheduledAt(byId.get(id))).label]));
    if (labels && first) {
      for (const [id, label] of now) {
        const title = firstLine(byId.get(id).text, 60);
        if (!labels.has(id)) announce.event("group", `New group, ${label}: ${title}`);
        else if (labels.get(id) !== label) announce.event("status", `${label}: ${title}`);
      }
    }
    labels = now;
  }

  // first=true refetches the first page and merges it (live refresh keeps
  // pages loaded with "Load more"); first=false appends the next page.
  async function load(first) {
    if (loading) {
      if (first) again = true;
      return;
    }
    loading = true;
    const moreHadFocus = !first && document.activeElement === more;
    more.disabled = true;
    const mine = gen;
    try {
      const page = await api.listGroups(first ? "" : cursor, filters);
      if (!alive) return;
      if (mine !== gen) {
        again = true; // a search replaced the filters meanwhile
        return;
      }
      const ids = [];
      for (const g of page.groups || []) {
        byId.set(g.id, g);
        ids.push(g.id);
      }
      if (first) {
        const rest = order.filter((id) => !ids.includes(id));
        order = ids.concat(rest);
        if (!cursor || order.length === ids.length) cursor = page.next_cursor || "";
      } else {
        order = order.concat(ids.filter((id) => !order.includes(id)));
        cursor = page.next_cursor || "";
      }
      more.hidden = !cursor;
      status.textContent = "";
      draw();
      announceChanges(first);
      // "Load more" hides after the last page: focus the first card it loaded.
      if (moreHadFocus && (more.hidden || focus.lost()) && ids.length) {
        const link = list.querySelector(`[data-group-id="${CSS.escape(ids[0])}"] .card-link`);
        if (link) link.focus();
      }
    } catch (e) {
      if (!alive) return;
      status.textContent = `Could not load groups: ${e.message}`;
      status.className = "list-status form-error";
    } finally {
      loading = false;
      more.disabled = false;
      if (again && alive) {
        again = false;
        load(true);
      }
    }
  }

  // cancelScheduled cancels a group still waiting for its send time; the
  // list then redraws its card and focus stays on it (draw keeps it).
  function cancelScheduled(g) {
    ask({
      title: "Cancel this scheduled group?",
      body: h("p", null, `Nobody has been sent “${firstLine(g.text, 60)}” yet; after Cancel nobody will be.`),
      choices: [
        { value: null, label: "Keep it scheduled", kind: "quiet" },
        { value: "cancel", label: "Cancel group", kind: "danger" },
      ],
      act: async () => {
        const c = await api.cancel(g.id);
        if (c && c.id) byId.set(g.id, { ...g, ...c });
      },
    }).then((v) => {
      if (!v || !alive) return;
      draw();
      toast("Group canceled.");
      load(true);
    });
  }

  const refresh = coalesce(() => load(true), 300);
  const stop = live(
    api.allStreamURL(),
    () => refresh(),
    (s) => {
      setLiveBadge(badge, s);
      // The stream gave up (e.g. 401): if the session ended, this check
      // sends the user to sign-in instead of retrying forever.
      if (s === "offline") api.session().catch(() => {});
    },
  );
  load(true);

  return () => {
    alive = false;
    refresh.cancel();
    stop();
  };
}
