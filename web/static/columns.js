// Column labels for tables drawn as stacked cards on a phone: every body
// cell gets its column's header text as data-label, which the phone CSS
// shows before the value (td::before { content: attr(data-label) }).
// Tables mark themselves with data-stack. The group's roster has its own
// card layout and labels, and is left alone.

/** headers returns a table's column header texts, by column index. */
function headers(table) {
  const row = table.tHead && table.tHead.rows[0];
  if (!row) return [];
  const out = [];
  for (const th of row.cells) {
    for (let i = 0; i < th.colSpan; i++) out.push(th.textContent.trim());
  }
  return out;
}

/** labelTable sets data-label on the cells of table that have none yet. */
export function labelTable(table) {
  if (table.querySelector("#roster-body")) return;
  const names = headers(table);
  if (!names.length) return;
  table.dataset.stack = "";
  for (const body of table.tBodies) {
    for (const tr of body.rows) {
      let col = 0;
      for (const td of tr.cells) {
        if (td.colSpan === 1 && !td.hasAttribute("data-label") && names[col]) td.dataset.label = names[col];
        col += td.colSpan;
      }
    }
  }
}

/** watch labels every table in root now and whenever rows are drawn. */
export function watch(root) {
  const all = () => root.querySelectorAll("table").forEach(labelTable);
  new MutationObserver(all).observe(root, { childList: true, subtree: true });
  all();
}
