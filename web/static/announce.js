// What a screen reader hears when the board changes by itself. Two polite
// live regions live in index.html for the page's whole life (a region
// added together with its text is often not read):
//
//   #announce-summary — one whole sentence of the numbers ("4 of 6
//     delivered, 1 failed, 3 replied"), spoken only when a number changed
//     and at most once per summaryMs, the latest numbers winning;
//   #announce-events  — single events that matter (a new reply, a
//     failure), coalesced over eventMs so a burst becomes one sentence.
//
// Views call these instead of making their own parts of the page live:
// a live table or tile grid would read every refresh aloud. Each view
// calls reset() when it starts, so one page's numbers never leak into
// the next page's announcements.

const timing = { summaryMs: 4000, eventMs: 2500 };

/** setTiming changes the announcement windows (tests use short ones). */
export function setTiming({ summaryMs, eventMs } = {}) {
  if (Number.isFinite(summaryMs)) timing.summaryMs = summaryMs;
  if (Number.isFinite(eventMs)) timing.eventMs = eventMs;
}

let lastSummary = null; // the text last spoken, or the page's baseline
let pendingSummary = null;
let summaryTimer = null;
let lastSpokenAt = 0;
let events = []; // {kind, text}
let eventTimer = null;

function region(id) {
  return document.getElementById(id);
}

// say replaces a region's text. Emptying first and writing in the next
// task makes screen readers read a sentence even when it repeats one
// said before ("Ana replied" twice).
function say(id, text) {
  const el = region(id);
  if (!el) return;
  el.textContent = "";
  setTimeout(() => {
    el.textContent = text;
  }, 30);
}

/**
 * reset starts a page: pending announcements are dropped and the regions
 * emptied. baseline, when given, is the summary the page opened with: it
 * is on screen already and is not spoken; only later changes are.
 */
export function reset(baseline = null) {
  clearTimeout(summaryTimer);
  clearTimeout(eventTimer);
  summaryTimer = eventTimer = null;
  pendingSummary = null;
  events = [];
  lastSummary = baseline;
  for (const id of ["announce-summary", "announce-events"]) {
    const el = region(id);
    if (el) el.textContent = "";
  }
}

function flushSummary() {
  summaryTimer = null;
  const text = pendingSummary;
  pendingSummary = null;
  if (text === null || text === lastSummary) return;
  lastSummary = text;
  lastSpokenAt = Date.now();
  say("announce-summary", text);
}

/**
 * summary announces the page's whole summary when it differs from the
 * last one spoken. Calls within summaryMs of the last announcement fold
 * into one, spoken at the end of the window with the latest numbers.
 */
export function summary(text) {
  if (summaryTimer === null && text === lastSummary) return;
  pendingSummary = text;
  if (summaryTimer !== null) return;
  const wait = Math.max(0, lastSpokenAt + timing.summaryMs - Date.now());
  summaryTimer = setTimeout(flushSummary, wait);
}

// A burst of this many events or more is spoken as counts.
const LIST_MAX = 2;

function flushEvents() {
  eventTimer = null;
  const batch = events;
  events = [];
  if (batch.length === 0) return;
  if (batch.length <= LIST_MAX) {
    say("announce-events", batch.map((e) => e.text).join(" "));
    return;
  }
  const counts = new Map();
  for (const e of batch) counts.set(e.kind, (counts.get(e.kind) || 0) + 1);
  const parts = [...counts].map(([kind, count]) => countText(kind, count));
  say("announce-events", `${parts.join(", ")}. Latest: ${batch[batch.length - 1].text}`);
}

const KIND_TEXT = {
  reply: ["new reply", "new replies"],
  failed: ["recipient failed", "recipients failed"],
  attention: ["recipient needs attention", "recipients need attention"],
  status: ["status change", "status changes"],
  group: ["new group", "new groups"],
};

function countText(kind, count) {
  const [one, many] = KIND_TEXT[kind] || ["change", "changes"];
  return `${count} ${count === 1 ? one : many}`;
}

/**
 * event queues one sentence about a single change that matters. kind
 * (reply, failed, attention, status, group) is how a burst is counted.
 * Events within eventMs of the first one are spoken together: one or two
 * as they are, more as counts and the latest.
 */
export function event(kind, text) {
  events.push({ kind, text });
  if (eventTimer === null) eventTimer = setTimeout(flushEvents, timing.eventMs);
}

/** quote shortens untrusted reply text for speech (it is text, never markup). */
export function quote(text, max = 80) {
  const s = String(text || "").replace(/\s+/g, " ").trim();
  return s.length > max ? s.slice(0, max - 1) + "…" : s;
}
