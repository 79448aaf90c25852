// Follow-up ladders on the board (docs/design.md §17): one step a line,
// "AFTER CHANNEL [TEXT]", such as "5m sms", "10m voice", "20m email Please
// answer". AFTER counts from the person's send. The server checks the
// steps; this only reads and writes the lines.

const CHANNELS = ["sms", "voice", "email"];

/** parseLadder reads ladder lines into {steps} or {error} (naming the line). */
export function parseLadder(text) {
  const steps = [];
  const rows = String(text || "").split("\n");
  for (let i = 0; i < rows.length; i++) {
    const line = rows[i].trim();
    if (!line) continue;
    const m = /^(\S+)\s+(\S+)(?:\s+(.*))?$/.exec(line);
    if (!m || !CHANNELS.includes(m[2].toLowerCase())) {
      return { error: `Line ${i + 1}: write AFTER CHANNEL [TEXT], such as "10m voice" (channels: ${CHANNELS.join(", ")}).` };
    }
    const step = { after: m[1], channel: m[2].toLowerCase() };
    if (m[3] && m[3].trim()) step.text = m[3].trim();
    steps.push(step);
  }
  return { steps };
}

/** ladderText writes steps back as lines. */
export function ladderText(steps) {
  return (steps || []).map((s) => [s.after, s.channel, s.text || ""].join(" ").trim()).join("\n");
}

/** ladderWhen says when each step goes, with at(after) naming the time. */
export function ladderWhen(steps, at) {
  return (steps || []).map((s) => `${s.channel} ${at(s.after)}`).join(", then ");
}
