// The settings/admin area (#/settings, admin keys), in plain words: what
// each retention policy does and when, when retention last ran and what it
// did (with a button to run a pass now), the hash key, quiet hours, the
// store, the providers and the server's version.
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

const count = (n, unit) => (n === 1 ? unit : `${n} ${unit}s`);

/** everyText says a Go duration ("1h0m0s") as a period: "every hour", "every 2 hours 30 minutes". */
export function everyText(d) {
  const m = /^(?:(\d+)h)?(?:(\d+)m(?!s))?(?:([\d.]+)s)?$/.exec(String(d || ""));
  if (!m || !(m[1] || m[2] || m[3])) return `every ${d}`;
  const secs = Number(m[1] || 0) * 3600 + Number(m[2] || 0) * 60 + Number(m[3] || 0);
  if (secs > 0 && secs % 86400 === 0) return `every ${count(secs / 86400, "day")}`;
  const parts = [];
  const hours = Math.floor(secs / 3600);
  const mins = Math.floor((secs % 3600) / 60);
  const rest = Math.round((secs % 60) * 1000) / 1000;
  if (hours) parts.push(count(hours, "hour"));
  if (mins) parts.push(count(mins, "minute"));
  if (rest) parts.push(count(rest, "second"));
  if (parts.length === 1 && !/^\d/.test(parts[0])) return `every ${parts[0]}`;
  return `every ${parts.map((p) => (/^\d/.test(p) ? p : `1 ${p}`)).join(" ")}`;
}

/** afterText says a policy age in hours: "after 30 days", "after 36 hours", "never" (negative: off). */
export function afterText(hours) {
  if (hours < 0) return "never";
  if (hours === 0) return "at once";
  if (hours % 24 === 0) return `after ${hours / 24} day${hours === 24 ? "" : "s"}`;
  return `after ${hours} hour${hours === 1 ? "" : "s"}`;
}

/** scheduleLine says when retention runs. */
export function scheduleLine(st) {
  if (!st || st.interval === "off") return "No schedule: retention runs only on request.";
  const next = st.next_at ? ` Next pass ${fmtFull(st.next_at)}.` : "";
  return `Runs ${everyText(st.interval)}.${next}`;
}

/** policyLines says what each retention stage does, one line each. */
export function policyLines(p) {
  const stage = (what, hours) => (hours < 0 ? `${what}: never (this stage is off).` : `${what} ${afterText(hours)}.`);
  const lines = [
    stage("Message and reply texts are emptied", p.redact_after_hours),
    stage("Phone numbers are replaced by a keyed hash and names dropped", p.hash_after_hours) +
      (p.hash_key_set ? "" : " Skipped for now: no hash key."),
    stage("Groups are deleted with their history", p.delete_after_hours),
    stage("Processed webhooks are purged", p.inbox_after_hours),
  ];
  const replay = p.replay_after_hours;
  lines.push(
    replay < 0
      ? "A processed webhook posted again is always refused (its record is kept for ever)."
      : `A processed webhook posted again is refused for ${afterText(replay).replace(/^after /, "")}.`,
  );
  return lines;
}

/** versionLine says which build runs, like `crewcast version`. */
export function versionLine(v) {
  const rev = v.revision ? ` (${v.revision.slice(0, 12)}${v.modified ? ", modified" : ""})` : "";
  return `crewcast ${v.version}${rev} ${v.go}`;
}

/** quietLine says new groups' default quiet hours. */
export function quietLine(v) {
  const zone = v.default_timezone || "UTC";
  if (!v.quiet_hours) return `New groups have no default quiet hours (times are in each recipient's time zone, ${zone} for numbers without one); a group can set its own.`;
  const [from, to] = v.quiet_hours.split("-");
  return `New groups hold messages from ${from} to ${to} in each recipient's time zone (${zone} for numbers without one); a group can set its own or turn them off.`;
}

/** providersLine says which provider sends and whose webhooks the server takes. */
export function providersLine(v) {
  const names = { telnyx: "Telnyx", twilio: "Twilio" };
  const list = (v.providers || []).map((p) => names[p] || p).join(" and ");
  const health = " The server does not report a provider's health to the board; check the provider's own status page.";
  if (v.provider === "demo") return `Demo mode: sending is simulated (the simulator posts ${list || "provider"} webhooks). No real messages go out.`;
  const via = v.provider ? `Sends through ${names[v.provider] || v.provider}` : "Sending provider not reported";
  return `${via}; takes signed webhooks from ${list || "no provider"}.${health}`;
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
  const policy = h("ul", { id: "retention-policy", class: "settings-list" });
  const hashKey = h("p", { id: "hash-key" });
  const run = h("button", { type: "button", id: "retention-run", class: "button button-small" }, "Run retention now");
  const version = h("p", { id: "server-version" }, "Loading…");
  const storeLine = h("p", { id: "server-store" });
  const providers = h("p", { id: "server-providers" });
  const quiet = h("p", { id: "quiet-hours" }, "Loading…");

  async function load() {
    try {
      const st = await request("GET", "/v1/retention");
      if (!alive) return;
      line.textContent = retentionLine(st);
      schedule.textContent = scheduleLine(st);
      replace(policy, policyLines(st.policy || {}).map((l) => h("li", null, l)));
      hashKey.textContent = st.policy && st.policy.hash_key_set
        ? "A hash key is set: numbers can be hashed."
        : "No hash key: the hashing stage is skipped (set CREWCAST_HASH_KEY, or let the server generate one).";
    } catch (e) {
      if (alive) line.textContent = `Cannot read the retention status: ${e.message}`;
    }
  }
  async function loadServer() {
    const [v, ready] = await Promise.allSettled([request("GET", "/v1/version"), request("GET", "/readyz")]);
    if (!alive) return;
    version.textContent = v.status === "fulfilled" ? versionLine(v.value) : `Cannot read the version: ${v.reason.message}`;
    providers.textContent = v.status === "fulfilled" ? providersLine(v.value) : "";
    quiet.textContent = v.status === "fulfilled" ? quietLine(v.value) : "Cannot read the default quiet hours.";
    storeLine.textContent = ready.status === "fulfilled"
      ? `Store: ${ready.value.engine}, schema version ${ready.value.migration_version}.`
      : `The store is not ready: ${ready.reason.message}`;
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
      { class: "page settings" },
      h("h1", null, "Settings"),
      h("h2", null, "Data retention"),
      line,
      schedule,
      policy,
      hashKey,
      run,
      h("h2", null, "Quiet hours"),
      quiet,
      h("h2", null, "Server"),
      version,
      storeLine,
      providers,
    ),
  );
  load();
  loadServer();
  return () => {
    alive = false;
  };
}
