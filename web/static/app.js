// The board's entry point: session check, hash routing and the top bar.
// Routes: #/signin, #/groups, #/groups/{id}, #/new, #/contacts, #/crews.
import { api, setUnauthorizedHandler } from "./api.js";
import { h, replace } from "./dom.js";
import { toast } from "./ui.js";
import * as signin from "./signin.js";
import * as groups from "./groups.js";
import * as group from "./group.js";
import * as create from "./create.js";
import * as contacts from "./contacts.js";
import * as crews from "./crews.js";

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
  if (path === "/contacts") return { name: "contacts" };
  if (path === "/crews") return { name: "crews" };
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
  who.textContent = session.name || session.key_id || "";
  who.title = session.scopes ? `Scopes: ${session.scopes.join(", ")}` : "";
  document.getElementById("nav-new").hidden = !canSend(session);
  const r = route(location.hash).name;
  for (const a of nav.querySelectorAll("[data-nav]")) {
    if (a.dataset.nav === r || (r === "group" && a.dataset.nav === "groups")) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
}

function render() {
  cleanup();
  cleanup = () => {};
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
  drawNav();
  const ctx = { session, canSend: canSend(session), navigate, signedIn };
  const titles = { signin: "Sign in", groups: "Groups", new: "New message", group: "Group", contacts: "Contacts", crews: "Crews" };
  document.title = `${titles[r.name]} — crewcast`;
  main.replaceChildren();
  switch (r.name) {
    case "signin":
      cleanup = signin.render(main, ctx);
      break;
    case "new":
      cleanup = canSend(session) ? create.render(main, ctx) : forbidden();
      break;
    case "group":
      cleanup = group.render(main, ctx, r.id);
      break;
    case "contacts":
      cleanup = contacts.render(main, ctx);
      break;
    case "crews":
      cleanup = crews.render(main, ctx);
      break;
    default:
      cleanup = groups.render(main, ctx);
  }
}

function forbidden() {
  replace(
    main,
    h("section", { class: "page" }, h("h1", null, "Not allowed"), h("p", null, "Your key can read groups but not send messages.")),
  );
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
