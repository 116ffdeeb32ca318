// DOM building and formatting helpers. Text always goes in as text (never as HTML), so nothing
// a lane title or an error message contains can become markup.

/** An element: h("button", {class: "primary", onclick: fn}, "Approve"). */
export function h(tag, attrs = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") element.className = value;
    else if (name === "dataset") Object.assign(element.dataset, value);
    else if (name.startsWith("on") && typeof value === "function") {
      element.addEventListener(name.slice(2), value);
    } else if (value === true) element.setAttribute(name, "");
    else element.setAttribute(name, String(value));
  }
  append(element, children);
  return element;
}

/** Append children (nested arrays, strings, nodes; null and false are skipped). */
export function append(element, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : String(child));
  }
  return element;
}

/** Replace an element's children. */
export function fill(element, ...children) {
  element.replaceChildren();
  return append(element, children);
}

const WORDS = {
  AWAITING_APPROVAL: "awaiting approval",
  CLOSED_OUT: "closed out",
  CLOSE_TICKET: "close ticket",
  NOBODY_ASKING: "nobody asking",
  DEAD_LETTERED: "dead-lettered",
  CLOSE_OUT_ACTION_FAILED: "close-out action failed",
  PENDING_ACTION: "pending action",
};

/** "AWAITING_APPROVAL" → "awaiting approval". */
export function words(name) {
  if (!name) return "";
  return WORDS[name] || String(name).toLowerCase().replaceAll("_", " ");
}

/** A state badge; its colour comes from the state name. */
export function badge(state, text) {
  return h("span", { class: `badge s-${state}` }, text || words(state));
}

/** A count bubble; hot when it asks for attention. */
export function count(n, hot = false) {
  return h("span", { class: hot && n > 0 ? "count hot" : "count" }, String(n));
}

/** How long ago (or ahead) an RFC 3339 time is, for people. */
export function relative(iso, now = Date.now()) {
  if (!iso) return "";
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return "";
  const seconds = Math.round((then - now) / 1000);
  const ahead = seconds > 0;
  const size = Math.abs(seconds);
  let text;
  if (size < 5) return "just now";
  if (size < 60) text = `${size} s`;
  else if (size < 3600) text = `${Math.round(size / 60)} min`;
  else if (size < 86400) text = `${Math.round(size / 3600)} h`;
  else text = `${Math.round(size / 86400)} d`;
  return ahead ? `in ${text}` : `${text} ago`;
}

/** A <time> element showing a relative time, the exact one in its title. */
export function when(iso) {
  if (!iso) return null;
  const date = new Date(iso);
  return h("time", { datetime: iso, title: date.toLocaleString() }, relative(iso));
}

/** Today's UTC day, YYYY-MM-DD (digests are per UTC day). */
export function utcDay(date = new Date()) {
  return date.toISOString().slice(0, 10);
}

/** The UTC day ``days`` after ``day``. */
export function shiftDay(day, days) {
  const date = new Date(`${day}T00:00:00Z`);
  date.setUTCDate(date.getUTCDate() + days);
  return utcDay(date);
}

/** ``read`` then ``then``, one run at a time: a call while one runs makes ``read`` go once more
 * in that run (a burst coalesces into one) and answers that run's promise. */
export function coalesced(read, then, isClosed) {
  let running = null;
  let again = false;
  return () => {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        await read();
      } while (again && !isClosed());
      await then();
    })().finally(() => {
      running = null;
    });
    return running;
  };
}

/** A URL only if it is plain http(s): receipts and tickets are worker-reported text. */
export function safeUrl(text) {
  try {
    const url = new URL(text);
    return url.protocol === "https:" || url.protocol === "http:" ? url.href : null;
  } catch {
    return null;
  }
}

/** Show a short message at the bottom of the screen (announced to screen readers). */
export function toast(message, { error = false } = {}) {
  const host = document.getElementById("toasts");
  if (!host) return;
  const note = h("div", { class: error ? "toast error" : "toast" }, message);
  host.append(note);
  setTimeout(() => note.remove(), error ? 8000 : 4500);
}

/** A card section with a heading and a body. */
export function section(title, { id, extra, className = "card" } = {}, ...body) {
  const headingId = id ? `${id}-title` : undefined;
  return h(
    "section",
    { class: className, id, "aria-labelledby": headingId },
    h("div", { class: "section-head" }, h("h3", { id: headingId }, title), extra),
    ...body,
  );
}
