// Labels, counts and time formatting. Presentation only: statuses, counts
// and transitions all come from the server; nothing here decides state.

/** Recipient statuses in display order, with label, tone (colour class) and a hint. */
export const STATUSES = {
  scheduled: { label: "Scheduled", tone: "neutral", hint: "Held until its send time or the end of the recipient's quiet hours" },
  pending: { label: "Pending", tone: "neutral", hint: "Waiting to be sent" },
  sending: { label: "Sending", tone: "progress", hint: "Handed to the provider; waiting for its answer" },
  sent: { label: "Sent", tone: "progress", hint: "Accepted by the provider; waiting for a delivery receipt" },
  delivered: { label: "Delivered", tone: "good", hint: "The handset received it" },
  failed: { label: "Failed", tone: "bad", hint: "Definitely not delivered" },
  unconfirmed: {
    label: "Unconfirmed",
    tone: "warn",
    hint: "It may or may not have been sent; needs an operator decision",
  },
  unknown: { label: "Unknown", tone: "warn", hint: "No final receipt arrived in time" },
  opted_out: { label: "Opted out", tone: "muted", hint: "The recipient opted out; not sent" },
  canceled: { label: "Canceled", tone: "muted", hint: "Canceled before it was sent" },
  not_needed: { label: "Not needed", tone: "muted", hint: "Never texted: the callout filled before their wave" },
};

/** Group statuses with label and tone. */
export const GROUP_STATUSES = {
  sending: { label: "Sending", tone: "progress" },
  awaiting: { label: "Awaiting receipts", tone: "progress" },
  complete: { label: "Complete", tone: "good" },
  canceled: { label: "Canceled", tone: "muted" },
  paused: { label: "Paused", tone: "warn" },
};

export function statusInfo(status) {
  return STATUSES[status] || { label: status || "Unknown", tone: "neutral", hint: "" };
}

export function groupStatusInfo(status, counts, scheduled = false) {
  if (scheduled) return { label: "Scheduled", tone: "neutral" };
  const info = GROUP_STATUSES[status] || { label: status || "Unknown", tone: "neutral" };
  // "Complete" is green only when nobody needs a person: a group that
  // ended with failed, unconfirmed or unknown recipients says so.
  if (status === "complete" && counts) {
    const need = tally(counts).needAttention;
    if (need) return { label: `Complete — ${need} need${need === 1 ? "s" : ""} attention`, tone: "warn" };
  }
  return info;
}

const n = (v) => (Number.isFinite(v) ? v : 0);

/**
 * tally turns the API's counts into the numbers the board shows. "final"
 * follows the server's meaning: no further provider outcome expected.
 */
export function tally(counts) {
  const c = counts || {};
  const inFlight = n(c.scheduled) + n(c.pending) + n(c.sending) + n(c.sent);
  const attention = n(c.unconfirmed) + n(c.unknown);
  const stopped = n(c.opted_out) + n(c.canceled);
  // not_needed: a callout filled before their wave; never texted, final.
  const notNeeded = n(c.not_needed);
  const total = inFlight + n(c.delivered) + n(c.failed) + attention + stopped + notNeeded;
  // carrier_blocked is the part of failed the carrier explained (spam
  // filter, unregistered sender, unreachable, landline): shown apart, so
  // "failed" here is the plain failures only.
  const blocked = Math.min(n(c.carrier_blocked), n(c.failed));
  return {
    total,
    delivered: n(c.delivered),
    failed: n(c.failed) - blocked,
    blocked,
    unconfirmed: n(c.unconfirmed),
    unknown: n(c.unknown),
    attention,
    stopped,
    notNeeded,
    inFlight,
    waiting: n(c.scheduled) + n(c.pending) + n(c.sending),
    scheduled: n(c.scheduled),
    sent: n(c.sent),
    replied: n(c.replied),
    acknowledged: n(c.acknowledged),
    ackYes: n(c.ack_yes),
    ackNo: n(c.ack_no),
    // Replies that are neither yes nor no.
    repliedOther: Math.max(0, n(c.replied) - n(c.acknowledged)),
    noReply: n(c.no_reply),
    // Everyone a person has to look at: failed, unconfirmed or unknown.
    needAttention: n(c.failed) + attention,
    final: total - inFlight,
  };
}

export function plural(count, one, many) {
  return `${count} ${count === 1 ? one : many || one + "s"}`;
}

/** summaryLine is the one-line text version of a group's progress. */
export function summaryLine(t) {
  const parts = [`${t.delivered} of ${t.total} delivered`];
  if (t.failed) parts.push(`${t.failed} failed`);
  if (t.blocked) parts.push(`${t.blocked} blocked by the carrier`);
  if (t.unconfirmed) parts.push(`${t.unconfirmed} unconfirmed`);
  if (t.unknown) parts.push(`${t.unknown} unknown`);
  if (t.inFlight) parts.push(`${t.inFlight} in progress`);
  if (t.stopped) parts.push(`${t.stopped} not sent`);
  if (t.notNeeded) parts.push(`${t.notNeeded} not needed`);
  return parts.join(" · ");
}

/** parseTime returns a Date, or null for null, empty, invalid or Go zero times. */
export function parseTime(s) {
  if (!s) return null;
  const d = new Date(s);
  if (Number.isNaN(d.getTime()) || d.getUTCFullYear() < 1971) return null;
  return d;
}

// The board's one date format: the viewer's locale and time zone, the zone
// named ("Jan 15, 2031, 12:30 PM CST"). Every page formats times through
// fmtDate (or fmtTime, fmtShort, fmtFull, fmtAgo, which use it).
const styles = {
  // A complete date and time.
  full: { year: "numeric", month: "short", day: "numeric", hour: "numeric", minute: "2-digit", timeZoneName: "short" },
  // A date and time within a list, the year left out.
  day: { month: "short", day: "numeric", hour: "numeric", minute: "2-digit", timeZoneName: "short" },
  // Today's clock, with seconds (timelines).
  clock: { hour: "numeric", minute: "2-digit", second: "2-digit", timeZoneName: "short" },
  // Today's clock.
  short: { hour: "numeric", minute: "2-digit", timeZoneName: "short" },
};
const formatters = {};

/**
 * fmtDate formats an API time in the board's one format; style is "full"
 * (the default), "day", "clock" or "short". "" for no or an invalid time.
 */
export function fmtDate(s, style = "full") {
  const d = s instanceof Date ? s : parseTime(s);
  if (!d) return "";
  formatters[style] = formatters[style] || new Intl.DateTimeFormat(undefined, styles[style] || styles.full);
  return formatters[style].format(d);
}

/** localZone names the viewer's IANA time zone ("America/Chicago"), or "" when the browser does not say. */
export function localZone() {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || "";
}

const today = (d) => d.toDateString() === new Date().toDateString();

/** fmtTime shows a time compactly: the clock today, date and clock otherwise. */
export function fmtTime(s) {
  const d = parseTime(s);
  return d ? fmtDate(d, today(d) ? "clock" : "day") : "";
}

/** fmtShort is fmtTime without seconds, for lists. */
export function fmtShort(s) {
  const d = parseTime(s);
  return d ? fmtDate(d, today(d) ? "short" : "day") : "";
}

/** fmtFull is a complete date and time, for tooltips and datetime attributes' text. */
export function fmtFull(s) {
  return fmtDate(s);
}

/** fmtAgo is a coarse relative time ("just now", "5 min ago"). */
export function fmtAgo(s, now = Date.now()) {
  const d = parseTime(s);
  if (!d) return "";
  const sec = Math.round((now - d.getTime()) / 1000);
  if (sec < 45) return "just now";
  const min = Math.round(sec / 60);
  if (min < 60) return `${min} min ago`;
  const hr = Math.round(min / 60);
  if (hr < 24) return `${hr} h ago`;
  return fmtDate(d, "day");
}

/** eventData decodes an event's data, which may arrive as an object or as base64 JSON. */
export function eventData(ev) {
  const d = ev && ev.data;
  if (d && typeof d === "object") return d;
  if (typeof d === "string") {
    try {
      return JSON.parse(d);
    } catch {
      try {
        return JSON.parse(atob(d));
      } catch {
        return {};
      }
    }
  }
  return {};
}

const RESULT_TEXT = {
  accepted: "Provider accepted the message",
  failed: "Provider rejected the message",
  retry: "Not sent; will try again",
  rate_limited: "Rate limited by the provider; will try again",
  uncertain: "Outcome uncertain: it may or may not have been sent",
  halted: "Sender problem: the group was paused",
};

function join(...parts) {
  return parts.filter(Boolean).join(" · ");
}

/** Provider error classes in words (see crewcast.ErrorClass). */
export const ERROR_CLASSES = {
  not_sent: "not sent; safe to resend",
  recipient: "permanent for this recipient",
  sender: "sender problem",
  carrier: "carrier error",
  uncertain: "outcome uncertain",
  filtered: "blocked by the carrier (spam filter)",
  unregistered: "sender number not registered",
  unreachable: "phone unreachable",
  landline: "cannot receive texts",
};

export function errorClassText(cls) {
  return cls ? ERROR_CLASSES[cls] || cls.replace(/_/g, " ") : "";
}

function errorText(code, cls, detail) {
  return join(code ? `error ${code}` : "", errorClassText(cls), detail);
}

function forIndex(list, index) {
  if (!Array.isArray(list) || list.length === 0) return null;
  if (list.length === 1) return list[0];
  return list.find((o) => Array.isArray(o.i) && o.i.includes(index)) || list[0];
}

/**
 * describeEvent returns {title, detail} for one journal event of one
 * recipient (index = its position in the group's roster). Unknown types get
 * a generic line so new server events still show up.
 */
export function describeEvent(ev, index) {
  const d = eventData(ev);
  const by = d.by ? `by ${d.by}` : "";
  switch (ev.type) {
    case "group.created": {
      const count = Array.isArray(d.recipients) ? d.recipients.length : 0;
      const me = Array.isArray(d.recipients) ? d.recipients[index] : null;
      return {
        title: "Message created",
        detail: join(count ? plural(count, "recipient") : "", me && me.suppressed ? "on the suppression list; will not be sent" : ""),
      };
    }
    case "send.claimed": {
      const send = forIndex(d.sends, index);
      const shared = send && Array.isArray(send.i) && send.i.length > 1;
      return { title: "Claimed for sending", detail: shared ? "one group MMS thread" : "" };
    }
    case "send.outcomes": {
      const o = forIndex(d.outcomes, index) || {};
      const when = parseTime(o.retry_at) ? `retry at ${fmtTime(o.retry_at)}` : "";
      return {
        title: RESULT_TEXT[o.result] || `Send result: ${o.result || "unknown"}`,
        detail: join(
          o.message_id ? `message ${o.message_id}` : "",
          errorText(o.code, o.class, o.detail),
          o.opt_out ? "recipient opted out" : "",
          when,
        ),
      };
    }
    case "status.observed": {
      const src = { lookup: "Status check: ", reconcile: "Matched a late receipt: " }[d.source] || "Provider reported ";
      return {
        title: src + statusInfo(d.status).label.toLowerCase(),
        detail: join(
          d.provider_status && d.provider_status !== d.status ? `provider says “${d.provider_status}”` : "",
          errorText(d.code, d.class, ""),
          d.opt_out ? "recipient opted out" : "",
          d.evidence,
        ),
      };
    }
    case "reply.received":
      if (d.channel === "voice" || d.channel === "email") {
        return {
          title: d.channel === "voice" ? "Answered by call" : "Answered by email",
          detail: d.response ? `chose ${d.response}` : "",
        };
      }
      return {
        title: d.ack === "yes" ? "Replied — acknowledged" : d.ack === "no" ? "Replied — declined" : "Replied",
        detail: join(d.text !== undefined ? `“${d.text}”` : "", d.keyword ? `keyword ${d.keyword.toUpperCase()}` : ""),
      };
    case "send.unconfirmed":
      return { title: "Marked unconfirmed", detail: d.reason || "the send's outcome cannot be known" };
    case "status.checked":
      return {
        title: "Status checked; no final receipt yet",
        detail: join(d.provider_status ? `provider says “${d.provider_status}”` : "", d.error, parseTime(d.next_check_at) ? `next check ${fmtTime(d.next_check_at)}` : ""),
      };
    case "status.expired":
      return { title: "No receipt by the deadline; marked unknown", detail: d.reason || "" };
    case "group.canceled":
      return { title: "Group canceled", detail: by };
    case "group.resumed":
      return { title: "Group resumed", detail: by };
    case "recipient.resolved":
      return {
        title: d.outcome === "delivered" ? "Operator confirmed delivered" : "Operator confirmed not delivered",
        detail: join(by, d.from ? `was ${statusInfo(d.from).label.toLowerCase()}` : ""),
      };
    case "recipient.retry":
      return { title: "Operator asked to retry", detail: by };
    default: {
      let raw = "";
      try {
        raw = JSON.stringify(d);
      } catch {
        raw = "";
      }
      if (raw.length > 160) raw = raw.slice(0, 157) + "…";
      return { title: ev.type || "event", detail: raw === "{}" ? "" : raw };
    }
  }
}

/** E164 is the shape the server accepts; used only for client-side hints. */
export const E164 = /^\+[1-9]\d{6,14}$/;

/** cleanNumber strips the spacing people paste (spaces, dashes, dots, parentheses). */
export function cleanNumber(s) {
  return s.trim().replace(/[\s().-]/g, "");
}

const GSM7 =
  "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà";
const GSM7_EXT = "^{}\\[~]|€\f";

/** MAX_SEGMENTS is the server's limit on a message (group.MaxSegments). */
export const MAX_SEGMENTS = 10;

/**
 * segments counts SMS segments as the server does (group.Segments): GSM-7
 * when every character is in the GSM alphabet (extension characters count
 * two), else UCS-2 in UTF-16 units; one segment up to 160/70 units, else
 * parts of 153/67 that never split an escape or a surrogate pair.
 */
export function segments(text) {
  let sizes = [];
  let gsm = true;
  for (const ch of text) {
    if (GSM7.includes(ch)) sizes.push(1);
    else if (GSM7_EXT.includes(ch)) sizes.push(2);
    else {
      gsm = false;
      break;
    }
  }
  if (!gsm) sizes = Array.from(text, (ch) => ch.length);
  const [single, part, encoding] = gsm ? [160, 153, "GSM-7"] : [70, 67, "UCS-2"];
  const units = sizes.reduce((a, b) => a + b, 0);
  if (units === 0) return { encoding, count: 0 };
  if (units <= single) return { encoding, count: 1 };
  let count = 1;
  let fill = 0;
  for (const u of sizes) {
    if (fill + u > part) {
      count++;
      fill = 0;
    }
    fill += u;
  }
  return { encoding, count };
}

/** maxChars is how many characters of an encoding fit in MAX_SEGMENTS. */
export function maxChars(encoding) {
  return MAX_SEGMENTS * (encoding === "GSM-7" ? 153 : 67);
}

/**
 * scheduledAt is the send time of a group that has not started: send_at
 * set, not canceled, and every recipient still waiting for it (none sent,
 * pending or with an outcome). Otherwise null.
 */
export function scheduledAt(g) {
  const at = parseTime(g && g.send_at);
  if (!at || g.status === "canceled" || g.status === "complete") return null;
  const c = g.counts || {};
  const t = tally(c);
  return t.scheduled > 0 && t.scheduled + t.stopped === t.total ? at : null;
}

const scheduleFmt = new Intl.DateTimeFormat(undefined, {
  weekday: "short",
  day: "numeric",
  month: "short",
  hour: "numeric",
  minute: "2-digit",
  hourCycle: "h23",
  timeZoneName: "short",
});
const heldClock = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
const heldDay = new Intl.DateTimeFormat(undefined, { weekday: "short", hour: "2-digit", minute: "2-digit", hourCycle: "h23" });

/** fmtSchedule is a send time in the viewer's zone, with the zone: "Fri, 1 Jan, 07:00 CST". */
export function fmtSchedule(s) {
  const d = parseTime(s);
  return d ? scheduleFmt.format(d) : "";
}

/** fmtHeld is the end of a hold: "07:00" today, "Sat 07:00" another day. */
export function fmtHeld(s) {
  const d = parseTime(s);
  if (!d) return "";
  return d.toDateString() === new Date().toDateString() ? heldClock.format(d) : heldDay.format(d);
}

/** scheduledSummary replaces summaryLine while a group waits for send_at. */
export function scheduledSummary(t) {
  const parts = [`Nothing sent yet · ${plural(t.scheduled, "recipient")} waiting for the send time`];
  if (t.stopped) parts.push(`${t.stopped} not sent`);
  if (t.notNeeded) parts.push(`${t.notNeeded} not needed`);
  return parts.join(" · ");
}
