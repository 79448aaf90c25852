// Carrier truth on the board: failures the carrier explained (a spam
// filter, an unregistered sender, an unreachable phone, a landline) get
// tiles of their own, so "blocked by the carrier" never reads as a plain
// "Failed". The classes are the API's error_class values (errcode.Class).

/** CARRIER_CLASSES: error_class → [tile label, hint]. */
export const CARRIER_CLASSES = {
  filtered: ["Blocked by carrier (spam filter)", "The carrier or provider filtered the message as spam: review the text before resending"],
  unregistered: ["Sender not registered", "The carrier refused the sender number: it is not registered (10DLC)"],
  unreachable: ["Phone unreachable", "The phone or its carrier could not be reached: a resend later may work"],
  landline: ["Cannot receive texts", "A landline or a number that cannot take SMS: ask for a mobile number"],
};

/** carrierCounts counts the failed recipients per carrier verdict; .total sums them. */
export function carrierCounts(recipients) {
  const out = { total: 0 };
  for (const cls of Object.keys(CARRIER_CLASSES)) out[cls] = 0;
  for (const r of recipients || []) {
    if (r.status !== "failed" || !(r.error_class in CARRIER_CLASSES)) continue;
    out[r.error_class]++;
    out.total++;
  }
  return out;
}

/**
 * failureTiles replaces the one "Failed" tile: the plain failures, then
 * one tile per carrier verdict that occurred.
 */
export function failureTiles(failed, recipients, tile) {
  const c = carrierCounts(recipients);
  const tiles = [tile("failed", "Failed", Math.max(failed - c.total, 0), "bad", c.total ? "Failed for a reason the carrier did not name" : null)];
  for (const [cls, [label, hint]] of Object.entries(CARRIER_CLASSES)) {
    if (c[cls]) tiles.push(tile(`carrier_${cls}`, label, c[cls], "bad", hint));
  }
  return tiles;
}
