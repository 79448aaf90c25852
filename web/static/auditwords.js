// The audit trail in words: who did what to which thing ("Ana signed in",
// "Ana sent “Crew call 7am” to 8 people"), with links to the thing's page.
// An entry holds its time, actor, action code, target and address; a
// group's title and size are looked up afterwards (fillGroups).
import { h } from "./dom.js";
import { plural, tally } from "./format.js";

/** isSetupKey reports whether a key id is the one CREWCAST_ADMIN_KEY registers. */
export function isSetupKey(id) {
  return typeof id === "string" && id.startsWith("key_bootstrap_");
}

/** keyName is a key's name as the board shows it: "Setup key" for the bootstrap key. */
export function keyName(id, name) {
  return isSetupKey(id) ? "Setup key" : name || id;
}

/** actorName names who acted, in words. */
export function actorName(a) {
  if (!a) return "Someone";
  if (a.type === "key") return keyName(a.id, a.name);
  if (a.type === "system") return a.id === "bootstrap" ? "Server setup" : a.name || "The server";
  return a.name || a.id || "Someone";
}

// Each action: its label in the filter, and what the actor did (a verb and
// how the target reads). Target kinds: group (an id), recipient ("grp_…
// #i …1234 [outcome]"), key ("id name scopes" or an id), words (as stored).
const ACTIONS = {
  "group.sent": ["Message sent", "sent", "group"],
  "group.canceled": ["Group canceled", "canceled", "group"],
  "group.resumed": ["Group resumed", "resumed", "group"],
  "group.nudged": ["Follow-up sent now", "sent the follow-up of", "group"],
  "recipient.resolved": ["Recipient marked", "marked", "recipient"],
  "recipient.retried": ["Recipient retried", "retried", "recipient"],
  "recipient.selected": ["Person selected", "selected", "recipient"],
  "recipient.released": ["Person released", "released", "recipient"],
  "group.wave_started": ["Next wave started", "started the next wave of", "group"],
  "suppression.added": ["Number opted out", "opted out", "words"],
  "suppression.removed": ["Opt-out removed", "removed the opt-out of", "words"],
  "key.created": ["API key created", "created the key", "key"],
  "key.revoked": ["API key revoked", "revoked the key", "key"],
  "user.created": ["User added", "added the user", "user"],
  "user.updated": ["User changed", "changed the user", "user"],
  "user.password_reset": ["Password reset", "reset the password of", "user"],
  "user.disabled": ["User disabled", "disabled the user", "user"],
  "user.enabled": ["User enabled", "enabled the user", "user"],
  "contact.created": ["Contact added", "added the contact", "contact"],
  "contact.updated": ["Contact changed", "changed the contact", "contact"],
  "contact.deleted": ["Contact deleted", "deleted the contact", "contact"],
  "contacts.imported": ["Contacts imported", "imported contacts", "contact"],
  "crew.created": ["Crew added", "added the crew", "crew"],
  "crew.updated": ["Crew changed", "changed the crew", "crew"],
  "crew.deleted": ["Crew deleted", "deleted the crew", "crew"],
  "template.created": ["Template added", "added the template", "words"],
  "template.updated": ["Template changed", "changed the template", "words"],
  "template.deleted": ["Template deleted", "deleted the template", "words"],
  "endpoint.created": ["Webhook endpoint added", "added the webhook endpoint", "endpoint"],
  "endpoint.updated": ["Webhook endpoint changed", "changed the webhook endpoint", "endpoint"],
  "endpoint.disabled": ["Webhook endpoint disabled", "disabled the webhook endpoint", "endpoint"],
  "endpoint.enabled": ["Webhook endpoint enabled", "enabled the webhook endpoint", "endpoint"],
  "endpoint.rotated": ["Webhook secret rotated", "rotated the secret of the webhook endpoint", "endpoint"],
  "endpoint.tested": ["Webhook endpoint tested", "tested the webhook endpoint", "endpoint"],
  "endpoint.recovered": ["Webhook endpoint recovered", "recovered the webhook endpoint", "endpoint"],
  "endpoint.deleted": ["Webhook endpoint deleted", "deleted the webhook endpoint", "endpoint"],
  "sender.created": ["Sender added", "added the sender", "words"],
  "sender.updated": ["Sender changed", "changed the sender", "words"],
  "sender.deleted": ["Sender removed", "removed the sender", "words"],
  "person.erased": ["Person erased", "erased the data of", "words"],
  "retention.run": ["Retention run", "ran retention", "words"],
  "session.signed_in": ["Signed in", "signed in", "words"],
  "session.sign_in_failed": ["Sign-in refused", "was refused signing in as", "words"],
  "session.signed_out": ["Signed out", "signed out", "words"],
};

/** actionCodes are the action codes the filter offers, in order. */
export const actionCodes = Object.keys(ACTIONS);

/** actionLabel is an action's name in the filter ("Message sent"), the code if unknown. */
export function actionLabel(code) {
  return (ACTIONS[code] || [code])[0];
}

const PAGES = { key: "#/keys", user: "#/users", contact: "#/contacts", crew: "#/crews", endpoint: "#/webhooks" };

/** groupLink links a group id to its board; fillGroups later gives it the group's title. */
function groupLink(id) {
  return h("a", { href: `#/groups/${encodeURIComponent(id)}`, class: "audit-group", dataset: { group: id } }, id);
}

/** targetNodes is how an entry's target reads after the verb. */
function targetNodes(kind, target, action) {
  if (!target) return [];
  const words = target.split(" ");
  switch (kind) {
    case "group":
      return [" ", groupLink(target), action === "group.sent" ? h("span", { class: "audit-size", dataset: { group: target } }) : null];
    case "recipient": {
      // "grp_… #3 …1234 delivered": the recipient, the group, the outcome.
      const [gid, , number, outcome] = words;
      return [` recipient ${number || ""} of `, groupLink(gid), outcome ? ` as ${outcome}` : ""];
    }
    case "key": {
      const [id, name, scopes] = words;
      const label = keyName(id, name && name !== id ? name : "");
      return [" ", h("a", { href: PAGES.key }, label || id), scopes ? ` (${scopes.replaceAll(",", ", ")})` : ""];
    }
    case "user": {
      // "usr_… email role" on creation, the id otherwise.
      const [id, email, role] = words;
      return [" ", h("a", { href: PAGES.user, title: id }, email || id), role ? ` (${role})` : ""];
    }
    case "words":
      return [" ", target];
    default:
      return [" ", h("a", { href: PAGES[kind] }, target)];
  }
}

/** sentence draws one entry as words; the raw action code stays in its title. */
export function sentence(e) {
  const [, verb, kind] = ACTIONS[e.action] || [e.action, e.action, "words"];
  const a = e.actor || {};
  return h(
    "span",
    { class: "audit-sentence", title: e.action },
    h("strong", { title: [a.type, a.id].filter(Boolean).join(" ") }, actorName(a)),
    ` ${verb}`,
    targetNodes(kind, e.target, e.action),
  );
}

/**
 * fillGroups gives the group links in root their group's first line and
 * a sent group its size ("to 8 people"), one lookup per group (at most
 * max); a group that cannot be read (deleted by retention) keeps its id.
 */
export async function fillGroups(root, get, cache, max = 20) {
  const ids = [...new Set([...root.querySelectorAll("a.audit-group")].map((a) => a.dataset.group))].slice(0, max);
  await Promise.all(
    ids.map(async (id) => {
      if (!cache.has(id)) cache.set(id, get(id).catch(() => null));
      const g = await cache.get(id);
      if (!g) return;
      const title = `“${(g.text || "").split("\n", 1)[0].trim().slice(0, 60) || id}”`;
      for (const a of root.querySelectorAll(`a.audit-group[data-group="${CSS.escape(id)}"]`)) a.textContent = title;
      const n = tally(g.counts).total;
      for (const s of root.querySelectorAll(`span.audit-size[data-group="${CSS.escape(id)}"]`)) s.textContent = ` to ${plural(n, "person", "people")}`;
    }),
  );
}
