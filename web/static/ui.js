// Shared widgets: status chips, the progress bar, toasts, the confirmation
// dialog and the live (SSE) connection.
import { h, replace } from "./dom.js";
import { statusInfo, groupStatusInfo, summaryLine, parseTime, fmtHeld, fmtFull } from "./format.js";

/**
 * copyButton copies text() to the clipboard and says "Copied" (the toast,
 * a polite live region; the button's label too). Without a clipboard (a
 * board served over plain HTTP) it selects target for a manual copy.
 */
export function copyButton(text, target, label = "Copy") {
  const btn = h("button", { type: "button", class: "button button-small copy" }, label);
  let timer = null;
  btn.addEventListener("click", async () => {
    try {
      if (!navigator.clipboard) throw new Error("no clipboard");
      await navigator.clipboard.writeText(text());
      btn.textContent = "Copied";
      toast("Copied");
      clearTimeout(timer);
      timer = setTimeout(() => (btn.textContent = label), 3000);
    } catch {
      if (target) getSelection().selectAllChildren(target);
      toast("Could not copy: the text is selected, copy it with your keyboard.", "error");
    }
  });
  return btn;
}

/** chip is a recipient status badge; the label is text, the colour only repeats it. */
export function chip(status) {
  const info = statusInfo(status);
  return h("span", { class: `chip tone-${info.tone}`, dataset: { status }, title: info.hint }, info.label);
}

/** recipientChip is chip(r.status), but a recipient held by quiet hours
 * (held past the group's send_at, if any) says until when: "Held until 07:00",
 * and one resolved by hand says who: "Delivered (marked by Ana)". */
export function recipientChip(r, g) {
  if (typeof r.resolved_by === "string" && r.status === "delivered") {
    // Confirmed delivered by hand: say so, and by whom, not just "Delivered".
    const info = statusInfo(r.status);
    const who = r.resolved_by ? `marked by ${r.resolved_by}` : "marked by hand";
    return h("span", { class: `chip tone-${info.tone}`, dataset: { status: r.status, marked: "1" }, title: info.hint }, `${info.label} (${who})`);
  }
  const held = parseTime(r.held_until);
  const sendAt = parseTime(g && g.send_at);
  if (r.status !== "scheduled" || !held || (sendAt && sendAt.getTime() === held.getTime())) return chip(r.status);
  const info = statusInfo(r.status);
  return h("span", { class: `chip tone-${info.tone}`, dataset: { status: r.status }, title: fmtFull(r.held_until) }, `Held until ${fmtHeld(r.held_until)}`);
}

/** groupChip is a group status badge; with counts, a complete group that
 * left anyone failed, unconfirmed or unknown says how many need attention;
 * a group waiting for its send_at says "Scheduled". */
export function groupChip(status, counts, scheduled = false) {
  const info = groupStatusInfo(status, counts, scheduled);
  return h("span", { class: `chip chip-group tone-${info.tone}`, dataset: { groupStatus: status } }, info.label);
}

/** flagChip is a secondary badge such as "Replied" or "Acknowledged". */
export function flagChip(label, tone, flag) {
  return h("span", { class: `chip chip-flag tone-${tone}`, dataset: { flag } }, label);
}

/**
 * progressBar shows a tally as stacked segments. Widths are set through
 * the CSSOM (allowed by the CSP, unlike style attributes); the text summary
 * carries the same information for screen readers and in print. label
 * names the bar (a progressbar without a name is read as just a number).
 */
export function progressBar(t, label = "Delivery progress") {
  const bar = h("div", {
    class: "progress",
    role: "progressbar",
    "aria-label": label,
    "aria-valuemin": 0,
    "aria-valuemax": t.total,
    "aria-valuenow": t.final,
    "aria-valuetext": summaryLine(t),
  });
  const parts = [
    ["delivered", t.delivered],
    ["failed", t.failed + (t.blocked || 0)],
    ["attention", t.attention],
    ["stopped", t.stopped],
    ["sent", t.sent],
  ];
  for (const [name, count] of parts) {
    if (!count || !t.total) continue;
    const seg = h("span", { class: `progress-seg seg-${name}` });
    seg.style.width = `${(100 * count) / t.total}%`;
    bar.appendChild(seg);
  }
  return bar;
}

const TABLE_ROLES = [
  ["table", "table"],
  ["thead, tbody, tfoot", "rowgroup"],
  ["tr", "row"],
  ["th[scope=col]", "columnheader"],
  ["th[scope=row]", "rowheader"],
  ["td", "cell"],
];

/**
 * tableRoles gives a table's parts their roles explicitly. A table that
 * CSS draws as cards on phones (display: block or grid) loses its table
 * semantics in some browsers (Safari), and with them the column headers
 * each cell is announced with; explicit roles keep them. Call it after
 * adding rows.
 */
export function tableRoles(table) {
  if (!table.hasAttribute("role")) table.setAttribute("role", "table");
  for (const [sel, role] of TABLE_ROLES.slice(1)) {
    for (const el of table.querySelectorAll(sel)) if (!el.hasAttribute("role")) el.setAttribute("role", role);
  }
}

let toastTimer = null;

/**
 * toast shows a short message at the bottom of the screen for a few
 * seconds. The region stays in the page while idle (empty and visually
 * hidden, never display:none), so screen readers already track it when
 * the first message arrives.
 */
export function toast(message, kind = "info") {
  const el = document.getElementById("toast");
  el.className = `toast toast-${kind}`;
  el.textContent = message;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => {
    el.className = "toast is-idle";
    el.textContent = "";
  }, kind === "error" ? 8000 : 4000);
}

/**
 * ask opens the page's <dialog> with a title, body nodes and choices. When
 * a choice is picked, act(value) runs while the dialog stays open; an error
 * it throws is shown inside the dialog (e.g. a 409 from the server) and the
 * user may pick again. Resolves to the picked value after act succeeds, or
 * null when dismissed. A real <dialog>, not window.confirm, so it can carry
 * an explanation and be driven by tests.
 */
export function ask({ title, body, choices, act }) {
  const dlg = document.getElementById("confirm-dialog");
  const err = document.getElementById("confirm-error");
  document.getElementById("confirm-title").textContent = title;
  replace(document.getElementById("confirm-body"), body);
  err.hidden = true;
  err.textContent = "";
  const box = document.getElementById("confirm-choices");
  return new Promise((resolve) => {
    let busy = false;
    const finish = (value) => {
      dlg.removeEventListener("close", onClose);
      dlg.removeEventListener("cancel", onCancel);
      if (dlg.open) dlg.close();
      resolve(value);
    };
    // The close event is queued: one left over from the dialog's previous
    // use can arrive after this one opened, and must not close it.
    const onClose = () => {
      if (!dlg.open) finish(null);
    };
    // Escape must not abandon a request in flight.
    const onCancel = (e) => {
      if (busy) e.preventDefault();
    };
    const buttons = choices.map((c) =>
      h(
        "button",
        {
          type: "button",
          class: `button ${c.kind ? "button-" + c.kind : ""}`,
          dataset: { choice: c.value ?? "dismiss" },
          onclick: async () => {
            if (busy) return;
            if (c.value == null) return finish(null);
            busy = true;
            buttons.forEach((b) => (b.disabled = true));
            try {
              if (act) await act(c.value);
              finish(c.value);
            } catch (e) {
              err.textContent = e.message || String(e);
              err.hidden = false;
            } finally {
              busy = false;
              buttons.forEach((b) => (b.disabled = false));
            }
          },
        },
        c.label,
      ),
    );
    replace(box, buttons);
    dlg.addEventListener("close", onClose);
    dlg.addEventListener("cancel", onCancel);
    dlg.showModal();
    const first = buttons.find((b, i) => choices[i].value == null) || buttons[0];
    first.focus();
  });
}

/**
 * live follows an SSE stream. onChange(data) runs for each "change" event
 * and with null after a reconnect (events may have been missed while away,
 * so the caller refetches). onState gets "connecting", "live",
 * "reconnecting" or "offline". EventSource retries on network errors by
 * itself; when it gives up (an HTTP error such as 401 or 503 closes it for
 * good) we start a new one after a pause. url may be a function, called
 * for each new connection. Returns a stop function.
 */
export function live(url, onChange, onState, retryMs = 5000) {
  let es = null;
  let stopped = false;
  let timer = null;
  let everOpen = false;
  const connect = () => {
    onState("connecting");
    es = new EventSource(typeof url === "function" ? url() : url);
    es.addEventListener("open", () => {
      onState("live");
      if (everOpen) onChange(null);
      everOpen = true;
    });
    es.addEventListener("change", (e) => {
      let data = null;
      try {
        data = JSON.parse(e.data);
      } catch {
        data = null;
      }
      onChange(data || {});
    });
    es.addEventListener("error", () => {
      if (stopped) return;
      if (es.readyState === EventSource.CLOSED) {
        onState("offline");
        es.close();
        timer = setTimeout(connect, retryMs);
      } else {
        onState("reconnecting");
      }
    });
  };
  connect();
  return () => {
    stopped = true;
    clearTimeout(timer);
    if (es) es.close();
  };
}

const LIVE_TEXT = {
  connecting: "Connecting…",
  live: "Live",
  reconnecting: "Reconnecting…",
  offline: "Offline — retrying",
};

/** liveBadge is the connection indicator; setLiveBadge updates it. */
export function liveBadge() {
  return h("span", { class: "live-badge", dataset: { state: "connecting" }, role: "status" }, LIVE_TEXT.connecting);
}

export function setLiveBadge(el, state) {
  el.dataset.state = state;
  el.textContent = LIVE_TEXT[state] || state;
}
