// Callouts that fill on the group board (docs/architecture.md, "Waves and
// exact quotas, as code"): "2 of 3 filled", the wave each person was
// texted in or waits for, who is selected or on standby, when the next
// wave goes, and the dispatcher's buttons (select or release a person,
// start the next wave now). Presentation only: the server decides
// everything (the wave a person waits for follows its rule).
import { h } from "./dom.js";
import { fmtTime, fmtFull, parseTime, plural } from "./format.js";

/** isCallout reports whether the group has an exact quota. */
export function isCallout(g) {
  return Boolean(g && g.quorum && g.quorum.exact);
}

/** calloutLine is "2 of 3 filled — wave 2 sent; next wave at 7:05". */
export function calloutLine(g) {
  const q = g.quorum;
  const selected = (g.counts && g.counts.selected) || 0;
  const standby = (g.counts && g.counts.standby) || 0;
  const notNeeded = (g.counts && g.counts.not_needed) || 0;
  const parts = [];
  const w = g.waves;
  if (w) parts.push(w.sent ? `wave ${w.sent} sent` : "no wave sent yet");
  if (w && parseTime(w.next_at)) {
    parts.push(h("span", null, "next wave at ", h("time", { datetime: w.next_at, title: fmtFull(w.next_at) }, fmtTime(w.next_at))));
  }
  if (standby) parts.push(`${standby} on standby`);
  if (notNeeded) parts.push(`${plural(notNeeded, "person", "people")} not needed`);
  const rest = [];
  parts.forEach((p, i) => rest.push(i ? "; " : " — ", p));
  const filled = Boolean(q.met_at);
  return h(
    "p",
    { class: `quorum${filled ? " is-met" : ""}`, id: "quorum" },
    h("strong", null, `${Math.min(selected, q.count)} of ${q.count} filled`),
    ...rest,
  );
}

// waits caches, per group object, the wave each person not texted yet
// waits for (see waitingWave).
const waits = new WeakMap();

/**
 * waitingWave is the wave a recipient not texted yet will go in, or 0.
 * The server's rule (group.NextWave): the next wave takes the next `size`
 * people not texted yet (pending or scheduled, no wave) in roster order,
 * which is crew order, then to/recipients.
 */
export function waitingWave(g, r) {
  if (!g.waves || !g.waves.size || r.wave) return 0;
  let m = waits.get(g);
  if (!m) {
    m = new Map();
    let k = 0;
    for (const x of g.recipients || []) {
      if (!x.wave && (x.status === "pending" || x.status === "scheduled")) {
        m.set(x.number, (g.waves.sent || 0) + 1 + Math.floor(k / g.waves.size));
        k++;
      }
    }
    waits.set(g, m);
  }
  return m.get(r.number) || 0;
}

/** calloutChips are a recipient's wave and selection chips. */
export function calloutChips(g, r, chip) {
  if (!isCallout(g)) return [];
  const out = [];
  if (r.selected) out.push(chip("Selected", "good", "selected"));
  if (r.standby) out.push(chip("Standby", "info", "standby"));
  if (r.wave) out.push(chip(`Wave ${r.wave}`, "neutral", "wave"));
  const w = waitingWave(g, r);
  if (w) out.push(chip(`Waits for wave ${w}`, "neutral", "waits"));
  return out;
}

/**
 * calloutRowButtons select or release a person by hand: Select for
 * someone whose answer is the quorum's and who is not selected (on
 * standby included: the dispatcher may take them over the count),
 * Release for someone selected or on standby.
 */
export function calloutRowButtons(g, r, canSend, on, who) {
  if (!canSend || !isCallout(g) || g.status === "canceled") return [];
  const said = r.response === g.quorum.response && r.status !== "opted_out";
  const out = [];
  if (said && !r.selected) {
    out.push(
      h(
        "button",
        { type: "button", class: "button button-small select", dataset: { focusKey: "select" }, onclick: () => on.select(r.number) },
        "Select",
        h("span", { class: "sr-only" }, ` ${who(r)}`),
      ),
    );
  }
  if (r.selected || r.standby) {
    out.push(
      h(
        "button",
        { type: "button", class: "button button-small release", dataset: { focusKey: "release" }, onclick: () => on.release(r.number) },
        "Release",
        h("span", { class: "sr-only" }, ` ${who(r)}`),
      ),
    );
  }
  return out;
}

/** nextWaveButton starts the next wave now, while one is due later. */
export function nextWaveButton(g, canSend, onclick) {
  if (!canSend || !g.waves || !parseTime(g.waves.next_at) || g.status === "canceled" || g.status === "paused") return null;
  return h("button", { type: "button", class: "button", id: "next-wave", onclick }, "Start next wave now");
}
