// One group: counters, roster with status chips and replies, per-recipient
// timelines, operator actions and live refresh over SSE.
import { api } from "./api.js";
import { h, replace, coalesce } from "./dom.js";
import { tally, summaryLine, plural, fmtTime, fmtFull, parseTime, describeEvent, errorClassText, groupStatusInfo, scheduledAt, fmtSchedule, scheduledSummary } from "./format.js";
import { chip, recipientChip, groupChip, flagChip, progressBar, toast, ask, live, liveBadge, setLiveBadge, tableRoles } from "./ui.js";
import { firstLine } from "./groups.js";
import * as announce from "./announce.js";
import * as focus from "./focus.js";
import { hasAnswers, answerTiles, tallyBar, quorumLine, answerFilters, answerLabel } from "./answers.js";
import { policyMeta, policyButtons, followupLine, describePolicyEvent, policyKey } from "./followups.js";
import { eventData } from "./format.js";
import { failureTiles, carrierCounts } from "./carrier.js";
import { isCallout, calloutLine, calloutChips, calloutRowButtons, nextWaveButton } from "./callout.js";

const MODE_LABEL = { individual: "Individual messages", group_mms: "Group MMS thread" };
const CANCELABLE = new Set(["sending", "awaiting", "paused"]);
// Recipients an operator may resolve: the outcome is unknowable
// (unconfirmed) or the provider never said (unknown).
const RESOLVABLE = new Set(["unconfirmed", "unknown"]);
/** searchMatch is a roster search's predicate: a name containing the
 * words, or a number containing the digits typed. */
export function searchMatch(query) {
  const q = query.trim().toLowerCase();
  if (!q) return () => true;
  const digits = q.replace(/\D/g, "");
  const numeric = /^[\d\s()+.-]+$/.test(q);
  return (r) => (r.name || "").toLowerCase().includes(q) || (numeric && digits !== "" && r.number.includes(digits));
}

// One line each on the two statuses people confuse.
const STATUS_WHY = {
  unconfirmed: "Unconfirmed: the provider may or may not have taken it; crewcast will not resend on its own. Check, then mark it.",
  unknown: "Unknown: the provider took it, but no delivery receipt came in time.",
};

// Roster filters: value → [label, predicate].
const FILTERS = {
  all: ["All", () => true],
  attention: ["Needs attention", (r) => ["failed", "unconfirmed", "unknown"].includes(r.status)],
  replied: ["Replied", (r) => Boolean(r.reply_text || parseTime(r.replied_at))],
  progress: ["In progress", (r) => ["scheduled", "pending", "sending", "sent"].includes(r.status)],
  delivered: ["Delivered", (r) => r.status === "delivered"],
  stopped: ["Not sent", (r) => ["opted_out", "canceled"].includes(r.status)],
};

const COLUMNS = 6;

/** who names a recipient for buttons and announcements: name and number. */
function who(r) {
  return r.name ? `${r.name} ${r.number}` : r.number;
}

/**
 * spokenSummary is the group's numbers as one sentence for the live
 * summary: "4 of 6 delivered, 1 failed, 3 replied".
 */
export function spokenSummary(t) {
  const parts = [`${t.delivered} of ${t.total} delivered`];
  if (t.failed) parts.push(`${t.failed} failed`);
  if (t.blocked) parts.push(`${t.blocked} blocked by the carrier`);
  if (t.unconfirmed) parts.push(`${t.unconfirmed} unconfirmed`);
  if (t.unknown) parts.push(`${t.unknown} unknown`);
  if (t.inFlight) parts.push(`${t.inFlight} in progress`);
  if (t.stopped) parts.push(`${t.stopped} not sent`);
  if (t.replied) parts.push(`${t.replied} replied`);
  return parts.join(", ");
}

/**
 * changeEvents announces what happened to single recipients between two
 * views of the roster: a new or changed reply, a failure, a send whose
 * outcome became unconfirmed or unknown.
 */
function changeEvents(before, list) {
  for (const r of list) {
    const old = before.get(r.number);
    if (!old) continue;
    if (r.reply_text && r.reply_text !== old.reply_text) announce.event("reply", `${r.name || r.number} replied: ${announce.quote(r.reply_text)}.`);
    if (r.status !== old.status) {
      if (r.status === "failed") announce.event("failed", `Message to ${r.name || r.number} failed.`);
      else if (RESOLVABLE.has(r.status)) announce.event("attention", `Message to ${r.name || r.number} is ${r.status}; it needs a decision.`);
    }
  }
}

function tile(name, label, value, tone, hint) {
  return h(
    "div",
    { class: `tile tone-${tone}${value ? "" : " is-zero"}`, dataset: { counter: name }, title: hint || null },
    h("span", { class: "tile-value" }, String(value)),
    h("span", { class: "tile-label" }, label),
  );
}

// CHANNEL_LABELS name the ways an answer comes (counts.by_channel).
const CHANNEL_LABELS = { sms: "Answered by text", voice: "Answered by call", email: "Answered by email" };

/** channelTiles counts the answers per channel, once a ladder got one by call or email. */
function channelTiles(g) {
  const by = (g.counts && g.counts.by_channel) || {};
  if (!by.voice && !by.email) return [];
  return ["sms", "voice", "email"].map((c) => tile(`by_channel_${c}`, CHANNEL_LABELS[c], by[c] || 0, "info", "Standing answers that came this way"));
}

function counters(t, g) {
  if (hasAnswers(g)) {
    // One tile per response option plus "No reply yet" replace the
    // Yes / No / Replied / No reply tiles.
    const tiles = [
      tile("total", "Recipients", t.total, "neutral"),
      tile("delivered", "Delivered", t.delivered, "good"),
      tile("in_progress", "In progress", t.inFlight, "progress"),
      ...failureTiles(t.failed + t.blocked, g.recipients, tile),
      tile("unconfirmed", "Unconfirmed", t.unconfirmed, "warn"),
      tile("unknown", "Unknown", t.unknown, "warn"),
      ...answerTiles(g, tile),
      ...channelTiles(g),
    ];
    if (t.stopped) tiles.push(tile("not_sent", "Opted out / canceled", t.stopped, "muted"));
    return tiles;
  }
  const tiles = [
    tile("total", "Recipients", t.total, "neutral"),
    tile("delivered", "Delivered", t.delivered, "good"),
    tile("in_progress", "In progress", t.inFlight, "progress"),
    ...failureTiles(t.failed + t.blocked, g.recipients, tile),
    tile("unconfirmed", "Unconfirmed", t.unconfirmed, "warn"),
    tile("unknown", "Unknown", t.unknown, "warn"),
    tile("ack_yes", "Yes", t.ackYes, "good", "Answered yes"),
    tile("ack_no", "No", t.ackNo, "bad", "Answered no"),
    tile("replied", "Replied", t.repliedOther, "info", "Replied with something other than yes or no"),
    tile("no_reply", "No reply", t.noReply, "neutral", "Texted, or about to be, and has not replied"),
    ...channelTiles(g),
  ];
  if (t.scheduled) tiles.push(tile("scheduled", "Scheduled", t.scheduled, "neutral", "Held until the send time or the end of quiet hours"));
  if (t.stopped) tiles.push(tile("not_sent", "Opted out / canceled", t.stopped, "muted"));
  return tiles;
}

function replyChips(r) {
  if (r.ack === "yes") return flagChip("Acknowledged", "good", "ack-yes");
  if (r.ack === "no") return flagChip("Declined", "bad", "ack-no");
  if (r.reply_text || parseTime(r.replied_at)) return flagChip("Replied", "info", "replied");
  return null;
}

function lastUpdate(r) {
  const marks = [
    ["Delivered", r.delivered_at],
    ["Failed", r.failed_at],
    ["Sent", r.sent_at],
    ["Replied", r.replied_at],
  ]
    .map(([label, at]) => [label, at, parseTime(at)])
    .filter(([, , d]) => d);
  if (marks.length === 0) return h("span", { class: "muted" }, "—");
  marks.sort((a, b) => b[2] - a[2]);
  const [label, at] = marks[0];
  return h("span", null, `${label} `, h("time", { datetime: at, title: fmtFull(at) }, fmtTime(at)));
}

// errorLine explains a provider error in plain words (the server's
// error_detail, one table for API, board and CLI), with a link to the
// provider's page about the code.
function errorLine(r) {
  if (!r.error_code && !r.error_class) return null;
  const text = r.error_detail || [r.error_code ? `Error ${r.error_code}` : "", errorClassText(r.error_class)].filter(Boolean).join(" · ");
  return h(
    "p",
    { class: "error-line" },
    h("span", { class: "error-detail" }, text),
    r.error_url
      ? [
          " ",
          h(
            "a",
            { class: "error-link", href: r.error_url, target: "_blank", rel: "noopener noreferrer" },
            `Error ${r.error_code} at the provider`,
            h("span", { class: "sr-only" }, " (opens in a new tab)"),
          ),
        ]
      : null,
  );
}

/** render shows group id in main and returns a cleanup function. */
export function render(main, ctx, id) {
  let alive = true;
  let group = null;
  let filter = "all";
  let loading = false;
  let again = false;
  let seen = new Map(); // number → what was last announced about it
  let statusLabel = "";
  const open = new Set(); // numbers whose timeline is shown
  const rows = new Map(); // number → {key, tr, histBtn, tl}

  const badge = liveBadge();
  const head = h("div", { class: "group-head-slot" });
  const notice = h("p", { class: "notice", id: "notice", role: "alert", hidden: true });
  const attention = h("div", { class: "attention-slot" });
  const stats = h("section", { class: "stats", "aria-label": "Counts" });
  const updated = h("span", { class: "updated" });
  const select = h("select", {
    id: "roster-filter",
    onchange: () => {
      filter = select.value;
      drawRoster();
    },
  });
  // A search by name or number (digits match however the number is typed).
  const search = h("input", {
    id: "roster-search",
    type: "search",
    autocomplete: "off",
    oninput: () => drawRoster(),
  });
  const tbody = h("tbody", { id: "roster-body" });
  let headKey = "";

  replace(
    main,
    h(
      "section",
      { class: "page" },
      h("a", { class: "back", href: "#/groups" }, "← All groups"),
      h("div", { class: "loading-slot" }, h("p", { class: "loading" }, "Loading group…")),
    ),
  );

  function layout() {
    replace(
      main,
      h(
        "section",
        { class: "page page-group" },
        h("a", { class: "back", href: "#/groups" }, "← All groups"),
        head,
        notice,
        h("div", { class: "status-line" }, badge, updated),
        stats,
        attention,
        h(
          "section",
          { class: "roster", "aria-labelledby": "roster-title" },
          h(
            "div",
            { class: "roster-head" },
            h("h2", { id: "roster-title" }, "Recipients"),
            h("label", { class: "filter", for: "roster-search" }, h("span", null, "Find"), search),
            h("label", { class: "filter", for: "roster-filter" }, h("span", null, "Show"), select),
          ),
          h(
            "table",
            { class: "roster-table" },
            h(
              "thead",
              null,
              h(
                "tr",
                null,
                h("th", { scope: "col" }, "Recipient"),
                h("th", { scope: "col" }, "Status"),
                h("th", { scope: "col" }, "Reply"),
                h("th", { scope: "col", class: "num" }, "Attempts"),
                h("th", { scope: "col" }, "Last update"),
                h("th", { scope: "col" }, h("span", { class: "sr-only" }, "Actions")),
              ),
            ),
            tbody,
          ),
        ),
      ),
    );
  }

  function showNotice(message) {
    notice.textContent = message;
    notice.hidden = !message;
  }

  function drawHead() {
    const g = group;
    const key = JSON.stringify([g.status, g.pause_reason, g.text, g.from, g.mode, ctx.canSend, tally(g.counts).needAttention, policyKey(g), !!scheduledAt(g)]);
    if (key === headKey) return;
    headKey = key;
    const t = tally(g.counts);
    document.title = `${firstLine(g.text, 40)} — crewcast`;
    // A redraw that removes the focused action (Cancel once canceled)
    // moves focus to the export link instead of dropping it to <body>.
    const mem = focus.remember(head);
    replace(
      head,
      h(
        "header",
        { class: "group-head" },
        h(
          "div",
          { class: "group-title-row" },
          h("h1", { id: "group-title" }, firstLine(g.text)),
          groupChip(g.status, g.counts, !!scheduledAt(g)),
        ),
        scheduledAt(g)
          ? h("p", { class: "schedule-line", id: "schedule" }, `Scheduled for ${fmtSchedule(g.send_at)}`)
          : null,
        // The title is the text's first line; repeat the whole text only
        // when the title does not already show all of it.
        firstLine(g.text) !== (g.text || "").trim()
          ? h("p", { class: "message-text", id: "message-text" }, g.text)
          : null,
        h(
          "dl",
          { class: "meta" },
          h("div", null, h("dt", null, "From"), h("dd", { class: "mono" }, g.from)),
          h("div", null, h("dt", null, "Mode"), h("dd", null, MODE_LABEL[g.mode] || g.mode)),
          h("div", null, h("dt", null, "Recipients"), h("dd", null, String(t.total))),
          h(
            "div",
            null,
            h("dt", null, "Created"),
            h("dd", null, h("time", { datetime: g.created_at, title: fmtFull(g.created_at) }, fmtTime(g.created_at))),
          ),
          h("div", null, h("dt", null, "ID"), h("dd", { class: "mono small" }, g.id)),
          policyMeta(g),
        ),
        h(
          "div",
          { class: "group-actions" },
          // download without a name: the server's (the group's text and day) wins.
          h("a", { class: "button", href: api.csvURL(g.id), download: "", id: "export-csv" }, "Export CSV"),
          policyButtons(g, ctx.canSend, { nudge: nudgeGroup, retryFailed: retryAllFailed }),
          nextWaveButton(g, ctx.canSend, startNextWave),
          ctx.canSend && g.status === "paused"
            ? h("button", { type: "button", class: "button button-primary", id: "resume-group", onclick: resumeGroup }, "Resume sending")
            : null,
          ctx.canSend && CANCELABLE.has(g.status)
            ? h("button", { type: "button", class: "button button-danger", id: "cancel-group", onclick: cancelGroup }, "Cancel group")
            : null,
        ),
        g.status === "paused"
          ? h(
              "p",
              { class: "banner banner-warn", role: "alert" },
              h("strong", null, "Paused. "),
              g.pause_reason ? `${g.pause_reason}. ` : "",
              "Sending has stopped until the sender problem is fixed.",
            )
          : null,
      ),
    );
    focus.restore(head, mem, ["export-csv"]);
  }

  let statsKey = "";
  function drawStats() {
    const t = tally(group.counts);
    const at = group.updated_at || group.created_at;
    updated.textContent = parseTime(at) ? `Updated ${fmtTime(at)}` : "";
    // Rebuilt only when a number changed, so a refresh that changed
    // nothing leaves the tiles (and a focused "Show them") alone.
    const key = JSON.stringify([group.counts, ctx.canSend, carrierCounts(group.recipients)]);
    if (key === statsKey) return;
    statsKey = key;
    const mem = focus.remember(attention);
    replace(
      stats,
      h("div", { class: "tiles" }, counters(t, group)),
      progressBar(t, "Delivery progress"),
      hasAnswers(group) ? tallyBar(group) : null,
      isCallout(group) ? calloutLine(group) : hasAnswers(group) ? quorumLine(group) : null,
      h("p", { class: "summary", id: "summary" }, scheduledAt(group) ? scheduledSummary(t) : summaryLine(t)),
    );
    if (t.needAttention) {
      // Everyone who needs a person, by kind, and what to do about each.
      const kinds = [
        [t.failed, "failed"],
        [t.blocked, "blocked by the carrier"],
        [t.unconfirmed, "unconfirmed"],
        [t.unknown, "unknown"],
      ]
        .filter(([count]) => count)
        .map(([count, word]) => `${count} ${word}`);
      const advice = [];
      if (t.failed) advice.push("Failed messages did not arrive: call those people or fix the number, and retry where the error allows it.");
      if (t.blocked) advice.push("Blocked messages were refused by the carrier (a spam filter, an unregistered sender, an unreachable phone or a landline; each row says which): change the text or the sender, or reach those people another way.");
      if (t.unconfirmed || t.unknown) {
        advice.push(
          ctx.canSend
            ? "For unconfirmed and unknown ones crewcast cannot tell whether the message arrived: check with the person, then resolve each one."
            : "For unconfirmed and unknown ones crewcast cannot tell whether the message arrived; someone who can send must resolve them.",
        );
      }
      replace(
        attention,
        h(
          "div",
          { class: "banner banner-warn attention", id: "attention" },
          h(
            "p",
            null,
            h("strong", null, `${plural(t.needAttention, "recipient")} need${t.needAttention === 1 ? "s" : ""} attention (${kinds.join(", ")}). `),
            advice.join(" "),
          ),
          h(
            "button",
            {
              type: "button",
              class: "button button-small",
              id: "show-attention",
              onclick: () => {
                filter = "attention";
                select.value = filter;
                drawRoster();
              },
            },
            "Show them",
          ),
        ),
      );
    } else {
      attention.replaceChildren();
    }
    // The banner went away with its button: the roster filter is next.
    focus.restore(attention, mem, [], select);
  }

  // filters are the roster filters: the fixed ones, plus one per answer
  // and "No reply yet" for a group with response options.
  function filters() {
    return hasAnswers(group) ? { ...FILTERS, ...answerFilters(group) } : FILTERS;
  }

  function drawFilter() {
    const list = group.recipients || [];
    if (!filters()[filter]) filter = "all";
    const opts = Object.entries(filters()).map(([value, [label, pred]]) => {
      const count = list.filter(pred).length;
      return h("option", { value, selected: value === filter }, `${label} (${count})`);
    });
    replace(select, opts);
    select.value = filter;
  }

  function row(r, index) {
    const histBtn = h(
      "button",
      {
        type: "button",
        class: "button button-quiet button-small history",
        "aria-expanded": open.has(r.number) ? "true" : "false",
        "aria-controls": `tl-${index}`,
        dataset: { focusKey: "history" },
        onclick: () => toggleTimeline(r.number),
      },
      "History",
      h("span", { class: "sr-only" }, ` for ${who(r)}`),
    );
    const actions = [];
    if (ctx.canSend && RESOLVABLE.has(r.status)) {
      actions.push(
        h(
          "button",
          {
            type: "button",
            class: "button button-warn button-small resolve",
            "aria-haspopup": "dialog",
            dataset: { focusKey: "resolve" },
            onclick: () => resolve(r.number, r.status),
          },
          "Resolve…",
          h("span", { class: "sr-only" }, ` ${who(r)}`),
        ),
      );
    }
    if (ctx.canSend && r.status === "failed") {
      actions.push(
        h(
          "button",
          { type: "button", class: "button button-small retry", dataset: { focusKey: "retry" }, onclick: () => retry(r.number) },
          "Retry",
          h("span", { class: "sr-only" }, ` ${who(r)}`),
        ),
      );
    }
    actions.push(...calloutRowButtons(group, r, ctx.canSend, { select: selectPerson, release: releasePerson }, who));
    actions.push(histBtn);
    const tr = h(
      "tr",
      { class: "recipient", dataset: { number: r.number, status: r.status, focusRow: r.number } },
      h(
        "td",
        { class: "col-who", "data-label": "Recipient" },
        // Names first: a dispatcher texts people, not numbers.
        r.name ? h("span", { class: "name" }, r.name) : null,
        h("span", { class: "number mono" }, r.number),
        h("a", { class: "person-link small", href: `#/people/${encodeURIComponent(r.number)}` }, "Across groups", h("span", { class: "sr-only" }, `: ${r.name || r.number}`)),
        // A template gives each person their own text: show what they got.
        r.text && r.text !== group.text ? h("p", { class: "sent-text" }, r.text) : null,
      ),
      h(
        "td",
        { class: "col-status", "data-label": "Status" },
        h(
          "div",
          { class: "chips" },
          recipientChip(r, group),
          answerLabel(group, r) ? flagChip(answerLabel(group, r), "info", "answer") : replyChips(r),
          ...calloutChips(group, r, flagChip),
        ),
        errorLine(r),
        STATUS_WHY[r.status] ? h("p", { class: "status-why small" }, STATUS_WHY[r.status]) : null,
        followupLine(r),
      ),
      h(
        "td",
        { class: "col-reply", "data-label": "Reply" },
        r.reply_text
          ? h("p", { class: "reply-text" }, r.reply_text)
          : h("span", { class: "muted" }, "—"),
      ),
      h("td", { class: "col-attempts num", "data-label": "Attempts" }, String(r.attempts || 0)),
      h("td", { class: "col-time", "data-label": "Last update" }, lastUpdate(r)),
      h("td", { class: "col-actions" }, h("div", { class: "row-actions" }, actions)),
    );
    return { tr, histBtn };
  }

  function timelineRow(index) {
    const body = h("div", { class: "timeline-box" }, h("p", { class: "muted" }, "Loading history…"));
    const tr = h("tr", { class: "timeline-row", id: `tl-${index}` }, h("td", { colspan: COLUMNS }, body));
    return { tr, body };
  }

  async function loadTimeline(number) {
    const entry = rows.get(number);
    if (!entry || !entry.tl) return;
    const index = (group.recipients || []).findIndex((r) => r.number === number);
    try {
      const res = await api.events(id, number);
      if (!alive || !entry.tl) return;
      const events = (res && res.events) || [];
      if (events.length === 0) {
        replace(entry.tl.body, h("p", { class: "muted" }, "No events yet."));
        return;
      }
      replace(
        entry.tl.body,
        h("h3", { class: "timeline-title" }, `History of ${number}`),
        h(
          "ol",
          { class: "timeline" },
          events.map((ev) => {
            const d = eventData(ev);
            const { title, detail } = describePolicyEvent(ev, d, d.by ? `by ${d.by}` : "", index) || describeEvent(ev, index);
            return h(
              "li",
              { class: "tl-item", dataset: { type: ev.type } },
              h("time", { class: "tl-time", datetime: ev.time, title: fmtFull(ev.time) }, fmtTime(ev.time)),
              h(
                "div",
                { class: "tl-main" },
                h("span", { class: "tl-title" }, title),
                h("code", { class: "tl-type" }, ev.type),
                detail ? h("p", { class: "tl-detail" }, detail) : null,
              ),
            );
          }),
        ),
      );
    } catch (e) {
      if (!alive || !entry.tl) return;
      replace(entry.tl.body, h("p", { class: "form-error" }, `Could not load history: ${e.message}`));
    }
  }

  function toggleTimeline(number) {
    if (open.has(number)) open.delete(number);
    else open.add(number);
    const entry = rows.get(number);
    if (entry) entry.histBtn.setAttribute("aria-expanded", open.has(number) ? "true" : "false");
    drawRoster();
    if (open.has(number)) loadTimeline(number);
  }

  // drawRoster updates the table in place: a row is rebuilt only when its
  // recipient changed, and unchanged rows are never moved, so focus and
  // open timelines survive live refreshes.
  function drawRoster() {
    // A rebuilt row replaces the focused button: focus moves to the same
    // control in the new row, or its History button (Retry is gone after
    // a retry), or the row that took a vanished row's place.
    const mem = focus.remember(tbody);
    drawFilter();
    const list = group.recipients || [];
    const shown = (filters()[filter] || FILTERS.all)[1];
    const found = searchMatch(search.value);
    const pred = (r) => shown(r) && found(r);
    const nodes = [];
    list.forEach((r, index) => {
      if (!pred(r)) return;
      const key = JSON.stringify(r) + ctx.canSend;
      let entry = rows.get(r.number);
      if (!entry || entry.key !== key) {
        const built = row(r, index);
        entry = { key, tr: built.tr, histBtn: built.histBtn, tl: entry ? entry.tl : null };
        rows.set(r.number, entry);
      }
      nodes.push(entry.tr);
      if (open.has(r.number)) {
        if (!entry.tl) entry.tl = timelineRow(index);
        nodes.push(entry.tl.tr);
      } else {
        entry.tl = null;
      }
    });
    if (nodes.length === 0) {
      nodes.push(h("tr", { class: "empty-row" }, h("td", { colspan: COLUMNS }, "No recipients match this filter.")));
    }
    let cur = tbody.firstChild;
    for (const n of nodes) {
      if (n === cur) cur = cur.nextSibling;
      else tbody.insertBefore(n, cur);
    }
    while (cur) {
      const next = cur.nextSibling;
      tbody.removeChild(cur);
      cur = next;
    }
    tableRoles(tbody.parentElement);
    focus.restore(tbody, mem, ["history"], select);
  }

  function apply(g, fromAction) {
    if (!alive) return;
    // An answer older than what is shown (an action's answer overtaken by
    // the stream's refresh: a release the standby's promotion followed at
    // once) would take the board back: keep the newer state.
    if (group && Number.isFinite(g.seq) && Number.isFinite(group.seq) && g.seq < group.seq) {
      if (fromAction) showNotice("");
      return;
    }
    if (!Array.isArray(g.recipients)) {
      if (fromAction) {
        // An action answered with a summary only; fetch the full view.
        refresh();
        return;
      }
      // The API omits an empty roster.
      g = { ...g, recipients: [] };
    }
    const first = group === null;
    const before = seen;
    seen = new Map(g.recipients.map((r) => [r.number, { status: r.status, reply_text: r.reply_text || "" }]));
    const t = tally(g.counts);
    const label = groupStatusInfo(g.status, g.counts, !!scheduledAt(g)).label;
    if (first) {
      // What the page opened with is on screen; only changes are spoken.
      announce.reset(spokenSummary(t));
    } else {
      changeEvents(before, g.recipients);
      if (label !== statusLabel) announce.event("status", `Group ${label.charAt(0).toLowerCase()}${label.slice(1)}.`);
      announce.summary(spokenSummary(t));
    }
    statusLabel = label;
    group = g;
    if (first) layout();
    drawHead();
    drawStats();
    drawRoster();
    if (fromAction) showNotice("");
  }

  async function load() {
    if (loading) {
      again = true;
      return;
    }
    loading = true;
    try {
      const g = await api.group(id);
      apply(g, false);
      if (group) for (const number of open) loadTimeline(number);
    } catch (e) {
      if (!alive) return;
      if (group === null) {
        replace(
          main,
          h(
            "section",
            { class: "page" },
            h("a", { class: "back", href: "#/groups" }, "← All groups"),
            h("h1", null, e.status === 404 ? "Group not found" : "Could not load the group"),
            h("p", { class: "form-error" }, e.message),
          ),
        );
      } else {
        showNotice(`Could not refresh: ${e.message}`);
      }
    } finally {
      loading = false;
      if (again && alive) {
        again = false;
        load();
      }
    }
  }

  const refresh = coalesce(load, 300);

  function resolve(number, status) {
    const mem = focus.remember(tbody);
    ask({
      title: `Resolve ${number}`,
      body: [
        h(
          "p",
          null,
          status === "unknown"
            ? "The provider accepted this message but never reported whether it reached the phone."
            : "crewcast cannot tell whether this message was sent: the provider call ended without a clear answer.",
        ),
        h("p", { class: "dialog-emphasis" }, "Check the handset or the provider's inbox first."),
        h(
          "ul",
          { class: "dialog-list" },
          h("li", null, h("strong", null, "Delivered"), " — you confirmed the person has the message. Nothing is sent again."),
          h(
            "li",
            null,
            h("strong", null, "Not delivered"),
            " — you confirmed it never arrived. crewcast sends it again if attempts remain, otherwise marks it failed.",
          ),
        ),
        h("p", { class: "muted" }, `Not sure? Go back and leave it ${status === "unknown" ? "unknown" : "unconfirmed"}.`),
      ],
      choices: [
        { value: null, label: "Back", kind: "quiet" },
        { value: "not_delivered", label: "Not delivered", kind: "secondary" },
        { value: "delivered", label: "Delivered", kind: "primary" },
      ],
      act: async (outcome) => apply(await api.resolve(id, number, outcome), true),
    }).then((outcome) => {
      // The dialog returns focus to the button that opened it; when a
      // redraw replaced that button, to its row instead.
      focus.restore(tbody, mem, ["history"], select);
      if (outcome) toast(`${number} marked ${outcome === "delivered" ? "delivered" : "not delivered"}.`);
    });
  }

  async function selectPerson(number) {
    try {
      apply(await api.selectRecipient(id, number), true);
      toast(`${number} selected.`);
    } catch (e) {
      showNotice(`Cannot select ${number}: ${e.message}`);
    }
  }

  async function releasePerson(number) {
    try {
      apply(await api.releaseRecipient(id, number), true);
      toast(`${number} released.`);
    } catch (e) {
      showNotice(`Cannot release ${number}: ${e.message}`);
    }
  }

  async function startNextWave() {
    try {
      apply(await api.nextWave(id), true);
      toast("Next wave started.");
    } catch (e) {
      showNotice(`Cannot start the next wave: ${e.message}`);
    }
  }

  async function retry(number) {
    try {
      apply(await api.retry(id, number), true);
      toast(`Retry requested for ${number}.`);
    } catch (e) {
      showNotice(`Cannot retry ${number}: ${e.message}`);
    }
  }

  function nudgeGroup() {
    ask({
      title: "Nudge non-responders now?",
      body: [
        h("p", null, "Everyone who has not answered and may still get a reminder gets their next one now."),
        h("p", null, "Nobody gets more reminders than the policy allows, nobody who answered or opted out is texted, and quiet hours still hold."),
      ],
      choices: [
        { value: null, label: "Not now", kind: "quiet" },
        { value: "nudge", label: "Nudge now", kind: "primary" },
      ],
      act: async () => apply(await api.nudge(id), true),
    }).then((v) => {
      if (v) toast("Reminders on their way.");
    });
  }

  function retryAllFailed() {
    ask({
      title: "Retry all failed?",
      body: [
        h("p", null, "Each failed recipient whose error allows it is sent the message again."),
        h("p", null, "Permanent failures, spent attempt budgets and opted-out numbers are skipped."),
      ],
      choices: [
        { value: null, label: "Not now", kind: "quiet" },
        { value: "retry", label: "Retry all failed", kind: "primary" },
      ],
      act: async () => {
        const res = await api.retryFailed(id);
        apply(res.group, true);
        return res;
      },
    }).then((v) => {
      if (v) toast("Retries requested.");
    });
  }

  function resumeGroup() {
    const mem = focus.remember(head);
    ask({
      title: "Resume sending?",
      body: [
        h("p", null, "Sending stopped because of a problem with the sender:"),
        h("p", { class: "dialog-emphasis" }, group.pause_reason || "no reason was recorded"),
        h("p", null, "Fix it first (number, account or provider settings), or the group will pause again."),
      ],
      choices: [
        { value: null, label: "Not yet", kind: "quiet" },
        { value: "resume", label: "Resume sending", kind: "primary" },
      ],
      act: async () => apply(await api.resume(id), true),
    }).then((v) => {
      focus.restore(head, mem, ["export-csv"]);
      if (v) toast("Sending resumed.");
    });
  }

  function cancelGroup() {
    const mem = focus.remember(head);
    ask({
      title: "Cancel this group?",
      body: [
        h("p", null, "Recipients who have not been sent the message yet will not get it."),
        h("p", null, "Messages already sent cannot be recalled; their receipts and replies are still tracked."),
      ],
      choices: [
        { value: null, label: "Keep sending", kind: "quiet" },
        { value: "cancel", label: "Cancel group", kind: "danger" },
      ],
      act: async () => apply(await api.cancel(id), true),
    }).then((v) => {
      focus.restore(head, mem, ["export-csv"]);
      if (v) toast("Group canceled.");
    });
  }

  // The stream starts after the first load, from the journal position that
  // load showed: nothing is missed and nothing old is replayed.
  let stop = () => {};
  function follow() {
    stop = live(
      () => api.groupStreamURL(id, group && group.seq),
      (data) => {
        if (!data || !data.group_id || data.group_id === id) refresh();
      },
      (s) => {
        setLiveBadge(badge, s);
        // The stream gave up (e.g. 401): if the session ended, this check
        // sends the user to sign-in instead of retrying forever.
        if (s === "offline") api.session().catch(() => {});
      },
    );
  }
  load().then(() => {
    if (alive && group) follow();
  });

  return () => {
    alive = false;
    refresh.cancel();
    stop();
  };
}
