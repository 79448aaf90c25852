// DOM helpers. Every piece of data reaches the page through createTextNode
// or textContent: an SMS reply is untrusted text and must never be parsed as
// HTML. There is deliberately no helper that takes markup.

/**
 * h builds an element. attrs: "class", "text" (textContent), "on<event>"
 * (listener), "dataset" (object), boolean true/false attributes, and
 * anything else via setAttribute. Children may be nodes, strings (made text
 * nodes), arrays, or null/undefined/false (skipped).
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [key, value] of Object.entries(attrs)) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") {
        el.className = value;
      } else if (key === "text") {
        el.textContent = String(value);
      } else if (key === "dataset") {
        for (const [k, v] of Object.entries(value)) el.dataset[k] = String(v);
      } else if (key.startsWith("on") && typeof value === "function") {
        el.addEventListener(key.slice(2), value);
      } else if (key === "style") {
        // Inline style attributes are blocked by the page's CSP.
        throw new Error("h: use a class, not a style attribute");
      } else if (value === true) {
        el.setAttribute(key, "");
      } else {
        el.setAttribute(key, String(value));
      }
    }
  }
  append(el, children);
  return el;
}

/** append adds children (nodes, strings, nested arrays) to el. */
export function append(el, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) {
      append(el, child);
    } else if (child instanceof Node) {
      el.appendChild(child);
    } else {
      el.appendChild(document.createTextNode(String(child)));
    }
  }
  return el;
}

/** replace empties el and fills it with children. */
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/**
 * coalesce returns a function that runs fn once, ms after the first call of
 * a burst; further calls during the wait fold into that run. Unlike a
 * trailing debounce, a steady stream of calls (a busy SSE stream) cannot
 * postpone fn forever, so the board keeps moving during a big send.
 */
export function coalesce(fn, ms) {
  let timer = null;
  const wrapped = () => {
    if (timer !== null) return;
    timer = setTimeout(() => {
      timer = null;
      fn();
    }, ms);
  };
  wrapped.cancel = () => {
    clearTimeout(timer);
    timer = null;
  };
  return wrapped;
}
