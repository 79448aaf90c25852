// Keeping keyboard focus where the user was when a view redraws part of
// itself (a live refresh, an action that rebuilds a row, a dialog that
// closes after the control that opened it was replaced). A removed
// element cannot keep focus: the browser drops it to <body> and a
// keyboard or screen-reader user is thrown back to the top of the page.
//
// Mark the parts: data-focus-row="<stable id>" on each repeated item (a
// roster row, a card) and data-focus-key="<role>" on its controls
// ("history", "retry"). remember() before the redraw, restore() after.

const FOCUSABLE = 'button:not([disabled]), a[href], input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])';

function keyOf(el) {
  return (el && (el.dataset.focusKey || el.id)) || "";
}

function visible(el) {
  return el.isConnected && el.getClientRects().length > 0;
}

/**
 * remember notes what has focus inside container, as keys that survive a
 * rebuild: its row id, its key and the row's position. Returns null when
 * focus is elsewhere.
 */
export function remember(container) {
  const a = document.activeElement;
  if (!a || a === document.body || !container.contains(a)) return null;
  const row = a.closest("[data-focus-row]");
  const rows = [...container.querySelectorAll("[data-focus-row]")];
  return { el: a, key: keyOf(a), row: row ? row.dataset.focusRow : null, index: row ? rows.indexOf(row) : -1 };
}

/** lost reports whether focus fell out of the page's content (to <body>, or to a closed dialog). */
export function lost() {
  const a = document.activeElement;
  return !a || a === document.body || !visible(a);
}

/**
 * restore puts focus back after a redraw of container when it was lost:
 * on the remembered element if it is still shown, else on the control
 * with the same key in the same row, else on the first of fallbackKeys
 * in that row, else on that row's first control; when the row is gone,
 * on the row that took its place (or the last one); else on fallback.
 * Does nothing when focus is somewhere sensible already.
 */
export function restore(container, mem, fallbackKeys = [], fallback = null) {
  if (!mem || !lost()) return false;
  const target = find(container, mem, fallbackKeys) || fallback;
  if (!target) return false;
  target.focus({ preventScroll: false });
  return document.activeElement === target;
}

function find(container, mem, fallbackKeys) {
  if (visible(mem.el) && container.contains(mem.el)) return mem.el;
  const byKey = (scope, key) => key && [...scope.querySelectorAll(FOCUSABLE)].find((el) => keyOf(el) === key && visible(el));
  const first = (scope) => [...scope.querySelectorAll(FOCUSABLE)].find(visible);
  if (mem.row === null) return byKey(container, mem.key) || fallbackKeys.map((k) => byKey(container, k)).find(Boolean) || null;
  const rows = [...container.querySelectorAll("[data-focus-row]")];
  const same = rows.find((r) => r.dataset.focusRow === mem.row);
  if (same) return byKey(same, mem.key) || fallbackKeys.map((k) => byKey(same, k)).find(Boolean) || first(same) || null;
  const next = rows[Math.min(mem.index, rows.length - 1)];
  return next ? byKey(next, mem.key) || first(next) || null : null;
}

/** keep runs redraw() and puts focus back inside container if the redraw took it away. */
export function keep(container, redraw, fallbackKeys = [], fallback = null) {
  const mem = remember(container);
  redraw();
  restore(container, mem, fallbackKeys, fallback);
}
