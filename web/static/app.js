// The board's entry point: session check, hash routing and the top bar.
// Routes: #/signin, #/groups, #/groups/{id}, #/new (?template=<id>),
// #/contacts, #/crews, #/templates, #/replies, #/opt-outs, #/people/{number},
// #/account, and
// for admins #/users, #/keys, #/audit, #/senders, #/settings, #/webhooks.
import { api, setUnauthorizedHandler } from "./api.js";
import { h, replace } from "./dom.js";
import { toast } from "./ui.js";
import * as announce from "./announce.js";
import * as signin from "./signin.js";
import * as groups from "./groups.js";
import * as group from "./group.js";
import * as create from "./create.js";
import * as users from "./users.js";
import * as keys from "./keys.js";
import * as audit from "./audit.js";
import * as senders from "./senders.js";
import { isAdmin } from "./admin.js";
import * as settings from "./settings.js";
import * as webhooks from "./webhooks.js";
import * as contacts from "./contacts.js";
import * as crews from "./crews.js";
import * as templates from "./templates.js";
import * as inbox from "./inbox.js";
import * as columns from "./columns.js";
import { keyName } from "./auditwords.js";
import * as account from "./account.js";

const main = document.getElementById("main");
const nav = document.getElementById("nav");
const who = document.getElementById("who");

let session = null;
let cleanup = () => {};
let returnTo = "#/groups";

/** route parses location.hash. */
export function route(hash) {
  const path = (hash || "").replace(/^#/, "");
  let m;
  if (path === "/signin") return { name: "signin" };
  if (path === "/new") return { name: "new" };
  if ((m = /^\/new\?template=([^&]+)$/.exec(path))) return { name: "new", template: decodeURIComponent(m[1]) };
  if (path === "/templates") return { name: "templates" };
  if (path === "/replies") return { name: "replies" };
  if (path === "/opt-outs") return { name: "opt-outs" };
  if ((m = /^\/people\/([^/]+)$/.exec(path))) return { name: "person", number: decodeURIComponent(m[1]) };
  if (path === "/users" || path === "/keys" || path === "/audit" || path === "/senders") return { name: path.slice(1) };
  if (path === "/settings") return { name: "settings" };
  if (path === "/webhooks") return { name: "webhooks" };
  if (path === "/contacts") return { name: "contacts" };
  if (path === "/crews") return { name: "crews" };
  if (path === "/account") return { name: "account" };
  if ((m = /^\/groups\/([^/]+)$/.exec(path))) return { name: "group", id: decodeURIComponent(m[1]) };
  return { name: "groups" };
}

function canSend(s) {
  const scopes = (s && s.scopes) || [];
  return scopes.includes("admin") || scopes.includes("send");
}

function navigate(hash) {
  if (location.hash === hash) render();
  else location.hash = hash;
}

function drawNav() {
  nav.hidden = !session;
  if (!session) return;
  who.textContent = session.key_id ? keyName(session.key_id, session.name) : session.name || "";
  who.title = session.role ? `Role: ${session.role}` : session.scopes ? `Scopes: ${session.scopes.join(", ")}` : "";
  document.getElementById("nav-new").hidden = !canSend(session);
  for (const a of nav.querySelectorAll("[data-admin]")) a.hidden = !isAdmin(session);
  document.getElementById("nav-settings").hidden = !isAdmin(session);
  document.getElementById("nav-webhooks").hidden = !isAdmin(session);
  const r = route(location.hash).name;
  for (const a of nav.querySelectorAll("[data-nav]")) {
    if (a.dataset.nav === r || (r === "group" && a.dataset.nav === "groups")) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
}

function render() {
  cleanup();
  cleanup = () => {};
  announce.reset();
  const r = route(location.hash);
  if (!session && r.name !== "signin") {
    returnTo = location.hash && location.hash !== "#/signin" ? location.hash : "#/groups";
    navigate("#/signin");
    return;
  }
  if (session && r.name === "signin") {
    navigate("#/groups");
    return;
  }
  // A one-time or reset password: choose a new one before anything else.
  if (session && session.must_change_password && r.name !== "account") {
    returnTo = location.hash || "#/groups";
    navigate("#/account");
    return;
  }
  drawNav();
  const ctx = { session, canSend: canSend(session), navigate, signedIn, signedOut };
  const titles = { signin: "Sign in", groups: "Groups", new: "New message", group: "Group", users: "Users", keys: "API keys", audit: "Audit trail", senders: "Senders", settings: "Settings", webhooks: "Webhook endpoints", contacts: "Contacts", crews: "Crews", templates: "Templates", replies: "Replies", "opt-outs": "Opt-outs", person: "History", account: "Account" };
  document.title = `${titles[r.name]} — crewcast`;
  main.replaceChildren();
  switch (r.name) {
    case "signin":
      cleanup = signin.render(main, ctx);
      break;
    case "new":
      cleanup = canSend(session) ? create.render(main, { ...ctx, template: r.template }) : forbidden();
      break;
    case "group":
      cleanup = group.render(main, ctx, r.id);
      break;
    case "users":
      cleanup = users.render(main, ctx);
      break;
    case "keys":
      cleanup = keys.render(main, ctx);
      break;
    case "audit":
      cleanup = audit.render(main, ctx);
      break;
    case "senders":
      cleanup = senders.render(main, ctx);
      break;
    case "settings":
      cleanup = settings.render(main, ctx);
      break;
    case "webhooks":
      cleanup = isAdmin(session) ? webhooks.render(main, ctx) : forbidden("Webhook endpoints need an admin key.");
      break;
    case "contacts":
      cleanup = contacts.render(main, ctx);
      break;
    case "crews":
      cleanup = crews.render(main, ctx);
      break;
    case "templates":
      cleanup = templates.render(main, ctx);
      break;
    case "replies":
      cleanup = inbox.renderReplies(main, ctx);
      break;
    case "opt-outs":
      cleanup = inbox.renderOptOuts(main, ctx);
      break;
    case "person":
      cleanup = inbox.renderPerson(main, ctx, r.number);
      break;
    case "account":
      cleanup = account.render(main, ctx);
      break;
    default:
      cleanup = groups.render(main, ctx);
  }
}

function forbidden(why = "Your key can read groups but not send messages.") {
  replace(main, h("section", { class: "page" }, h("h1", null, "Not allowed"), h("p", null, why)));
  return () => {};
}

function signedIn(s) {
  session = s;
  const next = returnTo;
  returnTo = "#/groups";
  navigate(next);
}

async function signOut() {
  try {
    await api.signOut();
  } catch {
    // Signing out locally still matters if the server call failed.
  }
  signedOut();
}

function signedOut() {
  session = null;
  drawNav();
  navigate("#/signin");
}

setUnauthorizedHandler(() => {
  if (!session) return;
  session = null;
  toast("Your session ended. Sign in again.", "error");
  render();
});

async function start() {
  document.getElementById("signout").addEventListener("click", signOut);
  columns.watch(main);
  window.addEventListener("hashchange", () => {
    // Focus the new page for screen readers first; a view that focuses a
    // field of its own (sign-in, the create form) then takes it over.
    main.focus({ preventScroll: true });
    window.scrollTo(0, 0);
    render();
  });
  try {
    session = await api.session();
  } catch (e) {
    session = null;
    if (e.status !== 401) toast(`Cannot check the session: ${e.message}`, "error");
  }
  render();
}

start();
