// Follow-ups, escalation, scheduling and quiet hours on the board (design
// §12): the group's policy in words, each recipient's next follow-up or
// hold, the "nudge" and "retry all failed" actions, and the journal lines
// of their events.
import { h } from "./dom.js";
import { fmtTime, fmtFull, parseTime, plural } from "./format.js";

const TIMES = ["once", "twice", "three times"];

/** fmtGoDuration turns "1h30m0s" or "90s" into "1 h 30 min" / "1 min 30 s". */
export function fmtGoDuration(s) {
  const m = /^(?:(\d+)h)?(?:(\d+)m(?!s))?(?:([\d.]+)s)?$/.exec(String(s || ""));
  if (!m || !(m[1] || m[2] || m[3])) return String(s || "");
  const parts = [];
  if (m[1] && m[1] !== "0") parts.push(`${m[1]} h`);
  if (m[2] && m[2] !== "0") parts.push(`${m[2]} min`);
  if (m[3] && Number(m[3]) !== 0) parts.push(`${Number(m[3])} s`);
  return parts.join(" ") || "0 s";
}

/**
 * policyText says what the group does besides its first send, e.g.
 * "Reminder every 10 min, twice; escalate to Supervisors at 30 min", or ""
 * for a group without a policy.
 */
export function policyText(g) {
  const parts = [];
  if (g.followup) {
    const n = g.followup.max;
    parts.push(`Reminder every ${fmtGoDuration(g.followup.after)}, ${TIMES[n - 1] || `${n} times`}`);
  }
  if (g.escalate) {
    const who = [...(g.escalate.crews || []), ...(g.escalate.to || [])].join(", ");
    parts.push(`escalate to ${who} at ${fmtGoDuration(g.escalate.after)}`);
  }
  if (parseTime(g.send_at)) parts.push(`scheduled for ${fmtFull(g.send_at)}`);
  if (g.quiet_hours && g.quiet_hours !== "off") {
    parts.push(g.priority === "critical" ? `quiet hours ${g.quiet_hours} (ignored: critical)` : `quiet hours ${g.quiet_hours}`);
  } else if (g.priority === "critical") {
    parts.push("critical");
  }
  const s = parts.join("; ");
  return s ? s[0].toUpperCase() + s.slice(1) : "";
}

/** policyMeta is the head's "Policy" entry (null without a policy). */
export function policyMeta(g) {
  const text = policyText(g);
  if (!text) return null;
  return h(
    "div",
    { class: "meta-policy" },
    h("dt", null, "Policy"),
    h(
      "dd",
      { id: "policy" },
      text,
      parseTime(g.escalated_at) ? h("span", { class: "muted" }, ` · escalated ${fmtTime(g.escalated_at)}`) : null,
    ),
  );
}

/** followupLine is a recipient's next follow-up or hold, or null. */
export function followupLine(r) {
  const held = parseTime(r.held_until);
  const next = parseTime(r.next_followup_at);
  if (!held && !next && !r.followups_sent) return null;
  const bits = [];
  if (held) bits.push(["Held until ", r.held_until]);
  else if (next) bits.push(["Next reminder ", r.next_followup_at]);
  return h(
    "p",
    { class: "followup-line muted small" },
    bits.map(([label, at]) => [label, h("time", { datetime: at, title: fmtFull(at) }, fmtTime(at))]),
    r.followups_sent ? `${bits.length ? " · " : ""}${plural(r.followups_sent, "reminder")} sent` : null,
  );
}

/**
 * policyButtons are the group's "Nudge non-responders now" and "Retry all
 * failed" buttons, when they apply.
 */
export function policyButtons(g, canSend, on) {
  if (!canSend) return [];
  const out = [];
  const waiting = (g.recipients || []).some((r) => parseTime(r.next_followup_at));
  if (g.followup && waiting && g.status !== "canceled" && g.status !== "paused") {
    out.push(h("button", { type: "button", class: "button", id: "nudge-group", onclick: on.nudge }, "Nudge non-responders now"));
  }
  if ((g.counts && g.counts.failed) > 0 && g.status !== "canceled") {
    out.push(h("button", { type: "button", class: "button", id: "retry-failed", onclick: on.retryFailed }, "Retry all failed"));
  }
  return out;
}

// CALL_OUTCOMES says how a ladder's call ended (recipient.call_ended).
const CALL_OUTCOMES = {
  answered: "answered",
  no_answer: "no answer",
  busy: "busy",
  machine: "answering machine",
  failed: "failed",
};

/** stepWords is a ladder step's attempt in words: "call: placed", "email sent". */
function stepWords(channel, o) {
  if (channel === "voice") {
    if (o.result === "accepted") return "Call: placed";
    if (o.result === "skipped") return "Call: skipped";
    return `Call: ${outcomeWords(o)}`;
  }
  if (o.result === "accepted") return "Email sent";
  if (o.result === "skipped") return "Email skipped";
  return `Email: ${outcomeWords(o)}`;
}

function outcomeWords(o) {
  switch (o.result) {
    case "accepted":
      return "sent";
    case "uncertain":
      return "outcome unknown (never resent)";
    case "failed":
      return "failed";
    case "stopped":
      return "not sent: they answered first";
    case "suppressed":
      return "not sent: on the suppression list";
    default:
      return "not sent; will be tried again";
  }
}

/**
 * describePolicyEvent returns {title, detail} for a journal event of design
 * §12, or null for any other type.
 */
export function describePolicyEvent(ev, d, by, index) {
  const mine = (list) => (Array.isArray(list) ? list.filter((x) => x.i === index || (Array.isArray(x.i) && x.i.includes(index))) : []);
  switch (ev.type) {
    case "followup.claimed": {
      const s = mine(d.sends)[0] || (d.sends || [])[0] || {};
      if (s.channel === "voice") return { title: "Call claimed", detail: "committed before the call is placed" };
      if (s.channel === "email") return { title: "Email claimed", detail: "committed before the mail is sent" };
      return { title: `Reminder ${s.n || ""} claimed`.replace("  ", " "), detail: "committed before the provider call" };
    }
    case "followup.outcomes": {
      const o = mine(d.outcomes)[0] || (d.outcomes || [])[0] || {};
      const title = o.channel === "voice" || o.channel === "email" ? stepWords(o.channel, o) : `Reminder ${outcomeWords(o)}`;
      const id = o.message_id && !o.message_id.startsWith("email:") ? `${o.channel === "voice" ? "call" : "message"} ${o.message_id.replace(/^call:/, "")}` : "";
      return { title, detail: [id, o.detail || ""].filter(Boolean).join(" · ") };
    }
    case "recipient.call_ended":
      return {
        title: `Call: ${CALL_OUTCOMES[d.outcome] || d.outcome || "ended"}`,
        detail: d.digits ? `pressed ${d.digits}` : d.outcome === "answered" ? "hung up without pressing a key" : "",
      };
    case "followup.stopped": {
      const r = mine(d.recipients)[0] || {};
      return { title: "No more reminders", detail: r.reason || "" };
    }
    case "followup.nudged":
      return { title: "Operator nudged non-responders", detail: by };
    case "recipient.held": {
      const r = mine(d.recipients)[0] || {};
      return { title: "Held for quiet hours", detail: parseTime(r.until) ? `until ${fmtFull(r.until)}` : "" };
    }
    case "escalation.claimed":
      if (d.skipped) return { title: "No escalation needed", detail: d.skipped };
      return { title: "Escalated", detail: [(d.sends || []).map((s) => s.to).join(", "), d.text ? `“${d.text}”` : ""].filter(Boolean).join(" · ") };
    case "escalation.outcomes":
      return { title: "Escalation " + (d.outcomes || []).map(outcomeWords).join(", "), detail: "" };
  }
  return null;
}

/** policyKey is what the head's policy parts depend on (to redraw it). */
export function policyKey(g) {
  return JSON.stringify([
    policyText(g),
    g.escalated_at || "",
    (g.counts && g.counts.failed) || 0,
    (g.recipients || []).some((r) => parseTime(r.next_followup_at)),
  ]);
}
