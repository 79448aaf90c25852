// Response options on the group board (docs/design.md §11): one tile per option
// plus "No reply yet", a tally bar, quorum progress and roster filters per
// answer. Used only for groups that ask for answers; groups without keep
// the Yes / No / Replied / No reply tiles.
import { h } from "./dom.js";
import { plural } from "./format.js";

/** hasAnswers reports whether the group asks for response options. */
export function hasAnswers(g) {
  return Array.isArray(g && g.responses) && g.responses.length > 0;
}

/** responseCount is how many people's latest answer is option key. */
export function responseCount(g, key) {
  const r = (g && g.counts && g.counts.responses) || {};
  return Number.isFinite(r[key]) ? r[key] : 0;
}

const TONES = ["good", "bad", "info", "warn", "progress", "neutral"];

function toneOf(o, i) {
  if (o.ack === "yes") return "good";
  if (o.ack === "no") return "bad";
  return TONES[(i + 2) % TONES.length];
}

/** answerTiles are the tiles that replace Yes / No / Replied / No reply. */
export function answerTiles(g, tile) {
  const tiles = g.responses.map((o, i) =>
    tile(`response_${o.key}`, `${o.key} ${o.label}`, responseCount(g, o.key), toneOf(o, i), `Answered ${o.key} (${o.label})`),
  );
  const noReply = (g.counts && g.counts.no_reply) || 0;
  tiles.push(tile("no_reply", "No reply yet", noReply, "neutral", "Texted, or about to be, and has not replied"));
  return tiles;
}

/** tallyBar shows each option's share of everyone asked, as one bar. */
export function tallyBar(g) {
  const answered = g.responses.reduce((n, o) => n + responseCount(g, o.key), 0);
  const noReply = (g.counts && g.counts.no_reply) || 0;
  const total = Math.max(answered + noReply, 1);
  const text = g.responses.map((o) => `${o.label}: ${responseCount(g, o.key)}`).concat([`no reply yet: ${noReply}`]).join(", ");
  const bar = h("div", { class: "tally-bar", id: "tally-bar", role: "img", "aria-label": `Answers — ${text}` });
  g.responses.forEach((o, i) => {
    const count = responseCount(g, o.key);
    if (!count) return;
    const seg = h("span", { class: `tally-seg tone-${toneOf(o, i)}`, title: `${o.label}: ${count}`, dataset: { key: o.key } });
    seg.style.width = `${(100 * count) / total}%`;
    bar.appendChild(seg);
  });
  return bar;
}

/** quorumLine says how close the group is to what it needs: "2 of 3 confirmed". */
export function quorumLine(g) {
  const q = g.quorum;
  if (!q) return null;
  const opt = g.responses.find((o) => o.key === q.response);
  const label = opt ? opt.label : q.response;
  const have = responseCount(g, q.response);
  const met = Boolean(q.met_at);
  const word = opt && opt.ack === "yes" ? "confirmed" : `answered “${label}”`;
  return h(
    "p",
    { class: `quorum${met ? " is-met" : ""}`, id: "quorum" },
    h("strong", null, `${Math.min(have, q.count)} of ${q.count} ${word}`),
    met
      ? q.keep_sending
        ? " — quorum met; sending continues."
        : " — quorum met; messages not yet sent were canceled."
      : ` — ${plural(Math.max(q.count - have, 0), "more answer")} needed.`,
  );
}

/** answerFilters are the roster filters per answer plus "No reply yet". */
export function answerFilters(g) {
  const out = {};
  for (const o of g.responses) out[`answer:${o.key}`] = [`Answered ${o.key} ${o.label}`, (r) => r.response === o.key];
  out.noreply = ["No reply yet", (r) => !r.reply_text && !r.replied_at && !["opted_out", "canceled"].includes(r.status)];
  return out;
}

/** answerLabel is the label of a recipient's answer, or "". */
export function answerLabel(g, r) {
  if (!hasAnswers(g) || !r.response) return "";
  const o = g.responses.find((x) => x.key === r.response);
  return o ? `${o.key} ${o.label}` : r.response;
}

/** answersLine is a list card's option counts: "5 Coming · 2 Can't · 1 no answer". */
export function answersLine(g) {
  const noReply = (g.counts && g.counts.no_reply) || 0;
  return g.responses.map((o) => `${responseCount(g, o.key)} ${o.label}`).concat([`${noReply} no answer`]).join(" · ");
}
