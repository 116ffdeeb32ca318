// Finding lanes among many: a search box (title, ticket, item key, ids), filters (state, next
// action, waiting on a human) and a page of cards at a time, newest first, with "Show more".
//
// The lanes are the view the page already holds: searching and filtering never call the API,
// and only the cards of the current page are in the DOM, so a coordinator with thousands of
// lanes renders as fast as one with a page of them.

import { fill, h, words } from "./dom.js";

export const PAGE_SIZE = 25;
const STATES = ["ACTIVE", "LIVE", "DONE", "CLOSED_OUT", "CANCELLED"];
// Item states a human decides on (in an ACTIVE lane).
export const HUMAN_STATES = new Set(["AWAITING_APPROVAL", "STOPPED", "DEAD"]);

// Lane → its lower-cased search text; built once per lane object (a new read is a new object).
const searchText = new WeakMap();

function textOf(lane) {
  let text = searchText.get(lane);
  if (text === undefined) {
    const parts = [lane.title, lane.laneId];
    for (const ticket of lane.tickets || []) parts.push(ticket.key, ticket.url);
    for (const item of lane.items || []) parts.push(item.key, item.itemId, item.title);
    text = parts.filter(Boolean).join("\n").toLowerCase();
    searchText.set(lane, text);
  }
  return text;
}

// The filters in the page's address (after "#c=<coordinator>"), so a link keeps them.
const HASH_KEYS = { query: "q", state: "state", nextAction: "next", waiting: "mine" };

/** Filters as the toolbar starts: those ``hash`` names (``#c=…&q=…&state=…``), else
 * everything, newest first. */
export function initialFilters(hash = "") {
  const params = new URLSearchParams(hash.replace(/^#/, ""));
  return {
    query: params.get(HASH_KEYS.query) || "",
    state: STATES.includes(params.get(HASH_KEYS.state)) ? params.get(HASH_KEYS.state) : "",
    nextAction: params.get(HASH_KEYS.nextAction) || "",
    waiting: params.get(HASH_KEYS.waiting) === "1",
    shown: PAGE_SIZE,
  };
}

/** The lane (and item) a link to a decision names (``#c=…&lane=…&item=…``, as webhooks and
 * e-mails send it), or null. */
export function decisionTarget(hash = "") {
  const params = new URLSearchParams(hash.replace(/^#/, ""));
  const laneId = params.get("lane");
  return laneId ? { laneId, itemId: params.get("item") || "" } : null;
}

/** ``filters`` as address parameters (only those set), to follow ``c=…``. */
export function filtersHash(filters) {
  const params = new URLSearchParams();
  if (filters.query) params.set(HASH_KEYS.query, filters.query);
  if (filters.state) params.set(HASH_KEYS.state, filters.state);
  if (filters.nextAction) params.set(HASH_KEYS.nextAction, filters.nextAction);
  if (filters.waiting) params.set(HASH_KEYS.waiting, "1");
  const text = params.toString();
  return text ? `&${text}` : "";
}

/** Lane ids with something a human decides on: an item waiting on one, an open pending action
 * or an open escalation. */
export function lanesWaitingOnHuman(view) {
  const waiting = new Set();
  for (const lane of view.lanes || []) {
    if (lane.state !== "ACTIVE") continue;
    if ((lane.items || []).some((item) => HUMAN_STATES.has(item.state))) waiting.add(lane.laneId);
  }
  for (const action of view.pendingActions || []) {
    if (action.state === "OPEN" && action.laneId) waiting.add(action.laneId);
  }
  for (const escalation of view.escalations || []) {
    if (escalation.open && escalation.laneId) waiting.add(escalation.laneId);
  }
  return waiting;
}

/** The lanes that match ``filters`` (in the view's order: newest first). */
export function filterLanes(lanes, filters, waiting) {
  const terms = filters.query.toLowerCase().split(/\s+/).filter(Boolean);
  return lanes.filter(
    (lane) =>
      (!filters.state || lane.state === filters.state) &&
      (!filters.nextAction || lane.nextAction === filters.nextAction) &&
      (!filters.waiting || waiting.has(lane.laneId)) &&
      (!terms.length || terms.every((term) => textOf(lane).includes(term))),
  );
}

function option(value, text, selected) {
  return h("option", { value, selected: value === selected }, text);
}

/**
 * The toolbar, built once (so typing is never interrupted by a live update): ``onChange()`` is
 * called after ``filters`` changed. ``update(lanes)`` refreshes the choices of next action.
 */
export function laneToolbar(cid, filters, { waitingLabel, onChange }) {
  const id = (name) => `${name}-${cid}`;
  const search = h("input", {
    type: "search",
    id: id("search"),
    value: filters.query,
    placeholder: "Title, ticket or item key",
    autocomplete: "off",
    spellcheck: "false",
    enterkeyhint: "search",
  });
  const state = h(
    "select",
    { id: id("state") },
    option("", "Any state", filters.state),
    STATES.map((value) => option(value, words(value), filters.state)),
  );
  const nextAction = h(
    "select",
    { id: id("next-action") },
    option("", "Any next action", filters.nextAction),
    filters.nextAction ? option(filters.nextAction, filters.nextAction, filters.nextAction) : null,
  );
  const waiting = h(
    "button",
    { type: "button", id: id("waiting"), class: "toggle", "aria-pressed": filters.waiting ? "true" : "false" },
    waitingLabel,
  );
  const changed = () => {
    filters.query = search.value.trim();
    filters.state = state.value;
    filters.nextAction = nextAction.value;
    filters.waiting = waiting.getAttribute("aria-pressed") === "true";
    filters.shown = PAGE_SIZE;
    onChange();
  };
  waiting.addEventListener("click", () => {
    waiting.setAttribute("aria-pressed", waiting.getAttribute("aria-pressed") === "true" ? "false" : "true");
    changed();
  });
  let typing = null;
  search.addEventListener("input", () => {
    // Each key would re-render a page of cards: wait for a pause in the typing.
    clearTimeout(typing);
    typing = setTimeout(changed, 120);
  });
  search.addEventListener("search", changed);
  for (const control of [state, nextAction]) control.addEventListener("change", changed);
  const element = h(
    "form",
    { class: "lane-filters", role: "search", "aria-label": "Find lanes", onsubmit: (event) => event.preventDefault() },
    h("div", { class: "field grow" }, h("label", { for: id("search") }, "Search lanes"), search),
    h("div", { class: "field" }, h("label", { for: id("state") }, "State"), state),
    h("div", { class: "field" }, h("label", { for: id("next-action") }, "Next action"), nextAction),
    h("div", { class: "field toggle-field" }, waiting),
  );

  /** Offer the next actions of ``lanes`` (with counts), keeping the chosen one. */
  function update(lanes) {
    const counts = new Map();
    for (const lane of lanes) {
      if (lane.nextAction) counts.set(lane.nextAction, (counts.get(lane.nextAction) || 0) + 1);
    }
    if (filters.nextAction && !counts.has(filters.nextAction)) counts.set(filters.nextAction, 0);
    const labels = [...counts.keys()].sort();
    const wanted = labels.map((label) => `${label}\t${counts.get(label)}`).join("\n");
    if (nextAction.dataset.choices === wanted) return; // unchanged: keep the open list as it is
    nextAction.dataset.choices = wanted;
    fill(
      nextAction,
      option("", "Any next action", filters.nextAction),
      labels.map((label) => option(label, `${label} (${counts.get(label)})`, filters.nextAction)),
    );
  }

  return { element, update };
}
