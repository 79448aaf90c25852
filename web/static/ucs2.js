// The preview's cost lines: segments in all, the cost when the server has
// a segment price, and the characters that force UCS-2 (70 characters a
// segment instead of 160) marked in the text, with a button that replaces
// the typographic ones by plain GSM characters.
import { h } from "./dom.js";
import { plural } from "./format.js";

/** PLAIN maps typographic characters to their plain GSM-7 stand-ins. */
export const PLAIN = {
  "\u2019": "'", // ’
  "\u2018": "'", // ‘
  "\u201C": '"', // “
  "\u201D": '"', // ”
  "\u2013": "-", // –
  "\u2014": "-", // —
  "\u2026": "...", // …
  "\u00A0": " ", // non-breaking space
};

/** plainText replaces the characters of PLAIN in text. */
export function plainText(text) {
  return Array.from(text, (c) => PLAIN[c] ?? c).join("");
}

// shown makes an invisible character visible in the marked text.
function shown(c) {
  return c === "\u00A0" ? "\u2423" : c;
}

/**
 * costLines are the preview's nodes for p (the server's preview answer)
 * and text (the text field it was asked for; ucs2_chars index its
 * characters, code points as Array.from counts them). replace(text) puts
 * the plain text into the field.
 */
export function costLines(p, text, replace) {
  const nodes = [];
  const total = plural(p.segments_total || 0, "SMS segment");
  nodes.push(h("p", { id: "preview-cost" }, p.cost !== undefined ? `${total} in all · cost ${p.cost}` : `${total} in all`));
  const marks = p.ucs2_chars || [];
  if (marks.length === 0) return nodes;
  const chars = Array.from(text);
  // Marked where the server's index meets its character in this text.
  const at = new Set(marks.filter((m) => chars[m.index] === m.char).map((m) => m.index));
  nodes.push(
    h("p", { id: "preview-ucs2-note" }, `${plural(marks.length, "character")} force UCS-2 (70 characters a segment instead of 160):`),
    h(
      "p",
      { class: "preview-sample", id: "preview-ucs2" },
      chars.map((c, i) => (at.has(i) ? h("mark", { class: "ucs2-char", title: `Forces UCS-2: U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}` }, shown(c)) : c)),
    ),
  );
  if (marks.some((m) => m.char in PLAIN)) {
    nodes.push(
      h("button", { type: "button", class: "button", id: "plain-quotes", onclick: () => replace(plainText(text)) }, "Use plain quotes and dashes"),
    );
  }
  return nodes;
}
