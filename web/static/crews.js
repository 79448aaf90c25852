// Crews: ordered lists of contacts. Create one from saved contacts
// (checkboxes) and extra numbers; edit one where it is listed (rename,
// members in and out, their order: the API's PATCH); delete one. The
// order is the crew's priority list (a callout texts members in this
// order, docs/design.md §15): the form lists the chosen members in order,
// and a dispatcher drags one by its handle (mouse, pen or touch) or moves
// it with its up and down buttons (keyboard).
import { request } from "./api.js";
import { h, replace } from "./dom.js";
import { plural } from "./format.js";
import { ask } from "./ui.js";

const enc = encodeURIComponent;

/** render shows the crews page and returns a cleanup function. */
export function render(main, ctx) {
  let alive = true;
  let contacts = [];
  let editing = null; // the crew being edited, or null for a new one
  const list = h("div", { id: "crews-list" });
  const name = h("input", { id: "crew-name", type: "text", autocomplete: "off", "aria-describedby": "crew-name-error" });
  const desc = h("input", { id: "crew-description", type: "text", autocomplete: "off" });
  const picks = h("fieldset", { class: "field", id: "crew-members", onchange: onPick }, h("legend", null, "Members"));
  // order: the chosen members' contact ids, in the crew's order.
  let order = [];
  let byID = new Map();
  let dragEnd = null; // ends the drag under way, if any
  const orderList = h("ol", { class: "crew-order", id: "crew-order", "aria-labelledby": "crew-order-label", "aria-describedby": "crew-order-help" });
  const orderEmpty = h("p", { class: "muted", id: "crew-order-empty" }, "No members chosen yet.");
  const orderStatus = h("p", { class: "help", id: "crew-order-status", role: "status" });
  const orderField = h(
    "div",
    { class: "field", id: "crew-order-field" },
    h("h3", { id: "crew-order-label" }, "Order"),
    h("p", { class: "help", id: "crew-order-help" }, "A callout texts members in this order, first wave first. Drag a member by its handle, or use its up and down buttons."),
    orderEmpty,
    orderList,
    orderStatus,
  );
  const extra = h("textarea", { id: "crew-numbers", rows: 3, spellcheck: "false", "aria-describedby": "crew-numbers-help crew-numbers-error" });
  const nameError = h("div", { class: "field-error", id: "crew-name-error" });
  const numbersError = h("div", { class: "field-error", id: "crew-numbers-error" });
  const formError = h("p", { class: "form-error", id: "crew-form-error", role: "alert", hidden: true });
  const save = h("button", { type: "submit", class: "button button-primary", id: "crew-save" }, "Create crew");
  const title = h("h2", { id: "crew-form-title" }, "New crew");
  const cancel = h("button", { type: "button", class: "button button-quiet", id: "crew-cancel", hidden: true, onclick: () => startEdit(null) }, "Cancel edit");
  const form = h(
    "form",
    { class: "card", id: "crew-form", novalidate: true, "aria-labelledby": "crew-form-title", onsubmit: onCreate },
    title,
    h("div", { class: "field" }, h("label", { for: "crew-name" }, "Name"), name, nameError),
    h("div", { class: "field" }, h("label", { for: "crew-description" }, "Description"), desc),
    picks,
    orderField,
    h(
      "div",
      { class: "field" },
      h("label", { for: "crew-numbers" }, "Other numbers"),
      h("p", { class: "help", id: "crew-numbers-help" }, "One per line, after the members above; a number not saved yet becomes a contact."),
      extra,
      numbersError,
    ),
    formError,
    h("div", { class: "form-actions" }, cancel, save),
  );

  replace(main, h("section", { class: "page" }, h("h1", null, "Crews"), list, ctx.canSend ? form : null));

  async function load() {
    try {
      const [cr, ct] = await Promise.all([request("GET", "/v1/crews"), request("GET", "/v1/contacts?limit=1000")]);
      if (!alive) return;
      contacts = (ct && ct.contacts) || [];
      byID = new Map(contacts.map((c) => [c.id, c]));
      const crews = (cr && cr.crews) || [];
      replace(
        list,
        crews.length
          ? h(
              "table",
              { class: "directory-table", "aria-label": "Crews" },
              h(
                "thead",
                null,
                h("tr", null, ["Crew", "Members", "Who"].map((c) => h("th", { scope: "col" }, c)), h("th", { scope: "col" }, h("span", { class: "sr-only" }, "Actions"))),
              ),
              h(
                "tbody",
                { id: "crews-body" },
                crews.map((k) =>
                  h(
                    "tr",
                    { class: "crew", dataset: { name: k.name } },
                    h("td", null, h("strong", null, k.name), k.description ? h("p", { class: "help" }, k.description) : null),
                    h("td", { class: "crew-size" }, String(k.size)),
                    h("td", null, k.members.map((id) => (byID.get(id) ? byID.get(id).name || byID.get(id).number : id)).join(", ")),
                    h(
                      "td",
                      { class: "row-actions" },
                      ctx.canSend ? h("button", { type: "button", class: "button button-small crew-edit", "aria-label": `Edit ${k.name}`, onclick: () => startEdit(k) }, "Edit") : null,
                      ctx.canSend
                        ? h("button", { type: "button", class: "button button-small button-danger", onclick: () => remove(k) }, `Delete ${k.name}`)
                        : null,
                    ),
                  ),
                ),
              ),
            )
          : h("p", { class: "muted" }, "No crews yet."),
      );
      replace(
        picks,
        h("legend", null, "Members"),
        contacts.length
          ? h(
              "div",
              { class: "pick-list" },
              contacts.map((c) =>
                h(
                  "label",
                  { for: `pick-${c.id}` },
                  h("input", { type: "checkbox", id: `pick-${c.id}`, value: c.id, class: "crew-pick", checked: order.includes(c.id) }),
                  h("span", null, c.name || c.number, c.name ? h("span", { class: "muted" }, ` ${c.number}`) : null),
                ),
              ),
            )
          : h("p", { class: "help" }, "No saved contacts yet: add numbers below, or import contacts first."),
      );
      renderOrder();
    } catch (e) {
      if (alive) replace(list, h("p", { class: "form-error" }, `Could not load crews: ${e.message}`));
    }
  }

  // startEdit fills the form with crew k (null: back to a new crew).
  function startEdit(k) {
    editing = k;
    title.textContent = k ? `Edit ${k.name}` : "New crew";
    save.textContent = k ? "Save changes" : "Create crew";
    cancel.hidden = !k;
    name.value = k ? k.name : "";
    desc.value = k ? k.description || "" : "";
    extra.value = "";
    order = k ? [...k.members] : [];
    const members = new Set(order);
    for (const box of picks.querySelectorAll("input.crew-pick")) box.checked = members.has(box.value);
    orderStatus.textContent = "";
    renderOrder();
    formError.hidden = true;
    if (k) name.focus();
  }

  async function remove(k) {
    ask({
      title: `Delete crew ${k.name}?`,
      body: "Its contacts stay; groups already sent keep their recipients.",
      choices: [
        { value: null, label: "Keep it" },
        { value: "delete", label: `Delete ${k.name}`, kind: "danger" },
      ],
      act: async () => {
        await request("DELETE", `/v1/crews/${enc(k.id)}`);
        load();
      },
    });
  }

  async function onCreate(e) {
    e.preventDefault();
    nameError.textContent = numbersError.textContent = "";
    name.removeAttribute("aria-invalid");
    extra.removeAttribute("aria-invalid");
    formError.hidden = true;
    syncOrder();
    const members = [...order];
    for (const line of extra.value.split("\n")) if (line.trim()) members.push(line.trim());
    if (!name.value.trim()) {
      nameError.textContent = "Give the crew a name.";
      name.setAttribute("aria-invalid", "true");
      name.focus();
      return;
    }
    save.disabled = true;
    try {
      const body = { name: name.value.trim(), description: desc.value.trim(), members };
      const k = editing ? await request("PATCH", `/v1/crews/${enc(editing.id)}`, body) : await request("POST", "/v1/crews", body);
      if (!alive) return;
      const verb = editing ? "Saved" : "Created";
      startEdit(null);
      formError.textContent = `${verb} ${k.name} with ${plural(k.size, "member")}.`;
      formError.hidden = false;
      load();
    } catch (err) {
      if (!alive) return;
      const f = (err.fields || [])[0];
      if (err.status === 409 || (f && f.field === "name")) {
        nameError.textContent = err.status === 409 ? "A crew with this name already exists." : f.message;
        name.setAttribute("aria-invalid", "true");
        name.focus();
      } else if (f && f.field.startsWith("members")) {
        numbersError.textContent = f.message;
        extra.setAttribute("aria-invalid", "true");
        extra.focus();
      }
      formError.textContent = `Not created: ${err.message}`;
      formError.hidden = false;
    } finally {
      save.disabled = false;
    }
  }

  // nameOf is how a member reads in the order list.
  function nameOf(id) {
    const c = byID.get(id);
    return c ? c.name || c.number : id;
  }

  // syncOrder makes order follow the checkboxes: unchecked members leave
  // it, newly checked ones join at the end (in the list's order). Members
  // without a checkbox (beyond the contacts loaded) stay.
  function syncOrder() {
    const boxes = [...picks.querySelectorAll("input.crew-pick")];
    const shown = new Set(boxes.map((b) => b.value));
    const checked = boxes.filter((b) => b.checked).map((b) => b.value);
    const kept = order.filter((id) => !shown.has(id) || checked.includes(id));
    order = [...kept, ...checked.filter((id) => !kept.includes(id))];
  }

  function onPick() {
    syncOrder();
    renderOrder();
  }

  // renderOrder draws the order list; focusOn (an id and "up" or
  // "down") puts the focus back on a moved member's button.
  function renderOrder(focusOn) {
    orderEmpty.hidden = order.length > 0;
    orderList.hidden = order.length === 0;
    replace(
      orderList,
      order.map((id, i) => {
        const name = nameOf(id);
        const handle = h("span", { class: "drag-handle", "aria-hidden": "true", title: "Drag to reorder" }, "⠿");
        const li = h(
          "li",
          { class: "crew-order-item", dataset: { id } },
          handle,
          h("span", { class: "crew-order-name" }, name),
          h(
            "span",
            { class: "crew-order-moves" },
            h(
              "button",
              { type: "button", class: "button button-small move-up", disabled: i === 0, onclick: () => move(i, i - 1, "up") },
              h("span", { "aria-hidden": "true" }, "↑"),
              h("span", { class: "sr-only" }, `Move ${name} up`),
            ),
            h(
              "button",
              { type: "button", class: "button button-small move-down", disabled: i === order.length - 1, onclick: () => move(i, i + 1, "down") },
              h("span", { "aria-hidden": "true" }, "↓"),
              h("span", { class: "sr-only" }, `Move ${name} down`),
            ),
          ),
        );
        handle.addEventListener("pointerdown", (e) => startDrag(e, li));
        return li;
      }),
    );
    if (focusOn) {
      const li = [...orderList.children].find((x) => x.dataset.id === focusOn.id);
      const btn = li && (li.querySelector(`button.move-${focusOn.dir}:not([disabled])`) || li.querySelector("button:not([disabled])"));
      if (btn) btn.focus();
    }
  }

  function moved(id) {
    orderStatus.textContent = `${nameOf(id)} is now ${order.indexOf(id) + 1} of ${order.length}.`;
  }

  // move puts member i at position j (a neighbour).
  function move(i, j, dir) {
    if (j < 0 || j >= order.length) return;
    const [id] = order.splice(i, 1);
    order.splice(j, 0, id);
    renderOrder({ id, dir });
    moved(id);
  }

  // startDrag follows the pointer that pressed a member's handle: the
  // member moves in front of the first other member whose middle is below
  // the pointer (else to the end), and the order is taken on release. The
  // document listens (moving the row in the list would end a pointer
  // capture on its handle).
  function startDrag(e, li) {
    if (e.button !== 0 || dragEnd) return;
    e.preventDefault();
    li.classList.add("is-dragging");
    const before = order.indexOf(li.dataset.id);
    const follow = (ev) => {
      if (ev.pointerId !== e.pointerId) return;
      const others = [...orderList.children].filter((x) => x !== li);
      const next = others.find((x) => {
        const r = x.getBoundingClientRect();
        return ev.clientY < r.top + r.height / 2;
      });
      if (next) {
        if (li.nextElementSibling !== next) orderList.insertBefore(li, next);
      } else if (orderList.lastElementChild !== li) {
        orderList.appendChild(li);
      }
    };
    const end = (ev) => {
      if (ev && ev.pointerId !== e.pointerId) return;
      document.removeEventListener("pointermove", follow);
      document.removeEventListener("pointerup", end);
      document.removeEventListener("pointercancel", end);
      dragEnd = null;
      li.classList.remove("is-dragging");
      if (!alive) return;
      order = [...orderList.children].map((x) => x.dataset.id);
      renderOrder();
      if (order.indexOf(li.dataset.id) !== before) moved(li.dataset.id);
    };
    dragEnd = end;
    document.addEventListener("pointermove", follow);
    document.addEventListener("pointerup", end);
    document.addEventListener("pointercancel", end);
  }

  load();
  return () => {
    alive = false;
    if (dragEnd) dragEnd();
  };
}
