// The settings/admin area (#/settings, admin keys): when data retention
// last ran and what it did, with a button to run a pass now.
import { request } from "./api.js";
import { h, replace } from "./dom.js";
import { fmtFull, plural } from "./format.js";
import { toast } from "./ui.js";

/** retentionLine says in one sentence when retention last ran and what it did. */
export function retentionLine(st) {
  if (!st || !st.last) return "Retention has not run since the server started.";
  const l = st.last;
  const r = l.report || {};
  const did = [
    plural(r.redacted || 0, "group") + " redacted",
    plural(r.hashed || 0, "group") + " hashed",
    plural(r.deleted || 0, "group") + " deleted",
    plural(r.inbox_purged || 0, "webhook") + " purged",
    plural(r.replies_redacted || 0, "unmatched reply", "unmatched replies") + " redacted",
  ];
  if (r.skipped) did.push(plural(r.skipped, "group") + " still sending, left for later");
  const when = fmtFull(l.finished_at);
  const how = l.trigger === "api" ? "on request" : "on schedule";
  const line = `Retention last ran ${when} (${how}): ${did.join(", ")}.`;
  return l.error ? `${line} It stopped early: ${l.error}` : line;
}

function scheduleLine(st) {
  if (!st || st.interval === "off") return "No schedule: retention runs only on request.";
  const next = st.next_at ? ` Next pass ${fmtFull(st.next_at)}.` : "";
  return `Runs every ${st.interval}.${next}`;
}

/** render shows the settings page in main and returns a cleanup function. */
export function render(main, ctx) {
  const isAdmin = ((ctx.session && ctx.session.scopes) || []).includes("admin");
  if (!isAdmin) {
    replace(main, h("section", { class: "page" }, h("h1", null, "Settings"), h("p", null, "Settings need an admin key.")));
    return () => {};
  }
  let alive = true;
  const line = h("p", { id: "retention-line", class: "retention-line" }, "Loading…");
  const schedule = h("p", { class: "card-meta" }, "");
  const run = h("button", { type: "button", id: "retention-run", class: "button button-small" }, "Run retention now");

  async function load() {
    try {
      const st = await request("GET", "/v1/retention");
      if (!alive) return;
      line.textContent = retentionLine(st);
      schedule.textContent = scheduleLine(st);
    } catch (e) {
      if (alive) line.textContent = `Cannot read the retention status: ${e.message}`;
    }
  }
  run.addEventListener("click", async () => {
    run.disabled = true;
    try {
      await request("POST", "/v1/retention/run");
      toast("Retention pass done.");
    } catch (e) {
      toast(`Retention pass failed: ${e.message}`, "error");
    }
    run.disabled = false;
    load();
  });
  replace(
    main,
    h(
      "section",
      { class: "page" },
      h("h1", null, "Settings"),
      h("h2", null, "Data retention"),
      line,
      schedule,
      run,
    ),
  );
  load();
  return () => {
    alive = false;
  };
}
