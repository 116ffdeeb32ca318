// One work coordinator, live: the view at a revision, kept current by the feed.
//
// The page renders every lane of GET …/view (view-reads.js), then follows
// …/ws?since=<that revision>. A delta means the view moved: what it touched is read again (one
// read at a time; deltas arriving meanwhile cause one more read). A snapshot (first connection
// after a long gap, or after a resync) is rendered as it comes.
//
// Only a page of lane cards is in the DOM (lanes.js: search, filters, "Show more"); the
// toolbar is built once, so a live update never interrupts someone typing in it.

import { api, coordinatorPath } from "./api.js";
import { indexLeases, itemName, lanesSummary, renderAttention, renderLanes } from "./board.js";
import { badge, coalesced, fill, h, toast, utcDay } from "./dom.js";
import { follow } from "./feed.js";
import { decisionTarget, filterLanes, filtersHash, initialFilters, laneToolbar, lanesWaitingOnHuman, PAGE_SIZE } from "./lanes.js";
import { renderCapacity, renderDigest, renderWorkers } from "./side.js";
import { laneSpend, readSpendDays, renderSpend, spendDay } from "./spend.js";
import { renderTrackers } from "./trackers.js";
import { readChanges, readWholeView } from "./view-reads.js";
import { mountWebhooks } from "./webhooks.js";

const CLOCK_TICK_MS = 30000;
const LIVE_WORDS = {
  connecting: "Connecting…",
  live: "Live",
  reconnecting: "Reconnecting…",
  refused: "Live updates refused",
};
// How long the page keeps a lane a person just decided on in view as it moves (it may change
// place when it goes live: finished lanes come after active ones).
const FOLLOW_MS = 5 * 60 * 1000;
const ANNOUNCED = new Set(["LANE_LIVE", "APPROVAL_REQUESTED", "ITEM_DEAD_LETTERED", "LANE_CLOSED_OUT", "ITEM_STOPPED"]);

/**
 * Render ``coordinator`` into ``host`` and keep it live. ``canDecide``: draw decision buttons.
 * ``hash``: the page address's fragment, whose lane filters are applied and kept up to date.
 * Returns ``{close()}``.
 */
export function mountCoordinator(host, { coordinator, canDecide, hash = "" }) {
  const cid = coordinator.coordinatorId;
  const ctx = {
    cid,
    canDecide,
    coordinator,
    view: null,
    revision: null,
    liveState: "connecting",
    liveDetail: "",
    error: "",
    why: new Map(),
    flash: new Set(),
    showAllAsks: false,
    filters: initialFilters(hash),
    digestDay: utcDay(),
    digest: null,
    digestError: "",
    trackers: null,
    trackersError: "",
    spend: new Map(),
    spendDays: null,
    spendDaysFor: "",
    spendDaysError: "",
    lanes: new Map(),
    itemNames: new Map(),
    index: { leases: new Map(), items: new Map() },
    refresh,
    toggleWhy,
    toggleAsks,
    showDigest,
    followLane,
  };
  // The webhooks card, for those who may manage them: built once, kept in place (its form
  // survives live renders), read again with the view.
  const webhooks = canDecide ? mountWebhooks(cid) : null;
  let followed = null;
  // A link to a decision: follow its lane and, once drawn, put the focus on the decision.
  let landing = decisionTarget(hash);
  if (landing) followLane(landing.laneId);
  let closed = false;
  // Lanes the deltas named since the last read (null: a change no lane id pins down).
  let touched = new Set();
  const notices = [];
  const toolbar = laneToolbar(cid, ctx.filters, {
    waitingLabel: canDecide ? "Waiting on me" : "Waiting on a human",
    onChange: () => {
      const address = `#c=${encodeURIComponent(cid)}${filtersHash(ctx.filters)}`;
      if (!closed) history.replaceState(null, "", address);
      render();
    },
  });

  function accept(view, revision) {
    const at = Number(revision ?? view.revision);
    if (ctx.revision !== null && at < ctx.revision) return false;
    ctx.view = view;
    ctx.revision = at;
    ctx.coordinator = view.workCoordinator || ctx.coordinator;
    ctx.lanes = new Map((view.lanes || []).map((lane) => [lane.laneId, lane]));
    ctx.index = indexLeases(view);
    ctx.spend = laneSpend(view);
    ctx.itemNames = new Map([...ctx.index.items.values()].map(({ item }) => [item.itemId, itemName(item)]));
    return true;
  }

  async function readView() {
    const named = touched;
    touched = new Set();
    try {
      accept(await readChanges(cid, ctx.view, named));
      ctx.error = "";
    } catch (error) {
      ctx.error = error.message;
      touched = null; // read it all next time
    }
  }

  /** Read the view again (coalescing bursts), then whatever hangs off it, then render. */
  function refresh() {
    return rereading();
  }
  const rereading = coalesced(
    readView,
    async () => {
      await Promise.all([
        refreshWhys(),
        ctx.digestDay === utcDay() ? readDigest() : null,
        readTrackers(),
        readSpend(),
        webhooks?.refresh(),
      ]);
      render();
      announce();
    },
    () => closed,
  );

  /** Keep ``laneId`` in view for a while: when its state changes, scroll to it. */
  function followLane(laneId) {
    followed = { laneId, until: Date.now() + FOLLOW_MS, state: null };
  }

  function keepFollowedInView() {
    if (!followed || Date.now() > followed.until) {
      followed = null;
      return;
    }
    const lane = ctx.lanes.get(followed.laneId);
    const card = document.getElementById(`lane-${followed.laneId}`);
    if (!lane || !card || lane.state === followed.state) return;
    followed.state = lane.state;
    const box = card.getBoundingClientRect();
    if (box.top < 0 || box.bottom > window.innerHeight) {
      card.scrollIntoView({ block: "start", behavior: "smooth" });
    }
  }

  async function refreshWhys() {
    await Promise.all([...ctx.why.keys()].map((key) => readWhy(key)));
  }

  async function readWhy(key) {
    const [kind, id] = key.split(":");
    try {
      const params = kind === "lane" ? { laneId: id } : { itemId: id };
      // An item's details also show its inputs and checkpoints (or that they are hidden).
      const laneId = kind === "item" ? ctx.index.items.get(id)?.lane.laneId : "";
      const [data, item] = await Promise.all([
        api(coordinatorPath(cid, "why"), { params }),
        laneId ? api(coordinatorPath(cid, "lanes", laneId, "items", id)).catch(() => null) : null,
      ]);
      if (ctx.why.has(key)) ctx.why.set(key, { data, item });
    } catch (error) {
      if (ctx.why.has(key)) ctx.why.set(key, { error: error.message });
    }
  }

  function toggleAsks() {
    ctx.showAllAsks = !ctx.showAllAsks;
    render();
  }

  async function toggleWhy(key) {
    if (ctx.why.has(key)) {
      ctx.why.delete(key);
      render();
      return;
    }
    ctx.why.set(key, {});
    render();
    await readWhy(key);
    render();
  }

  /** The tracker connections and their health, for those who may manage them. */
  async function readTrackers() {
    if (!canDecide) return;
    try {
      const answer = await api(coordinatorPath(cid, "trackers"));
      ctx.trackers = answer.trackerConnections || [];
      ctx.trackersError = "";
    } catch (error) {
      ctx.trackers = null;
      ctx.trackersError = error.status === 403 ? "" : error.message;
    }
  }

  /** The 14 days' spend, read again only when the server's day moved (today's bar follows
   * the view's dayUsage, which every read of the view brings). */
  async function readSpend() {
    if (!ctx.view) return;
    const day = spendDay(ctx.view);
    if (ctx.spendDaysFor === day && !ctx.spendDaysError) return;
    try {
      const days = await readSpendDays(cid, day);
      ctx.spendDays = days;
      ctx.spendDaysFor = day;
      ctx.spendDaysError = "";
    } catch (error) {
      ctx.spendDaysError = error.message;
    }
  }

  async function readDigest() {
    const day = ctx.digestDay;
    try {
      const digest = await api(coordinatorPath(cid, "digests", day));
      if (ctx.digestDay === day) {
        ctx.digest = digest;
        ctx.digestError = "";
      }
    } catch (error) {
      if (ctx.digestDay === day) ctx.digestError = error.message;
    }
  }

  async function showDigest(day) {
    ctx.digestDay = day;
    ctx.digest = null;
    ctx.digestError = "";
    render();
    await readDigest();
    render();
  }

  function onFrame(frame) {
    if (frame.type === "snapshot") {
      // The feed could not say what changed: read the whole view (the snapshot holds only
      // the newest lanes).
      if (Number(frame.revision) > (ctx.revision ?? -1)) {
        touched = null;
        refresh();
      }
    } else if (frame.type === "delta") {
      for (const event of frame.events || []) {
        if (event.laneId) ctx.flash.add(event.laneId);
        if (ANNOUNCED.has(event.type)) notices.push(event);
        if (touched && event.laneId) touched.add(event.laneId);
        else touched = null;
      }
      if (Number(frame.toRevision) > (ctx.revision ?? -1)) refresh();
    } else if (frame.type === "ping") {
      if (Number(frame.revision) > (ctx.revision ?? -1)) {
        touched = null; // moved without a delta we saw: read it all
        refresh();
      }
    }
  }

  function announce() {
    if (document.visibilityState !== "visible") {
      notices.length = 0;
      return;
    }
    for (const event of notices.splice(0)) {
      const lane = ctx.lanes.get(event.laneId);
      const title = lane ? `“${lane.title}”` : "A lane";
      const item = ctx.index.items.get(event.itemId)?.item;
      const name = item ? itemName(item) : "an item";
      const text = {
        LANE_LIVE: `${title} is live`,
        APPROVAL_REQUESTED: `${title}: ${name} waits for approval`,
        ITEM_DEAD_LETTERED: `${title}: ${name} was dead-lettered`,
        LANE_CLOSED_OUT: `${title} closed out for a human`,
        ITEM_STOPPED: `${title}: ${name} stopped for a human`,
      }[event.type];
      if (text) toast(text, { error: event.type === "ITEM_DEAD_LETTERED" });
    }
  }

  function onStatus(state, detail) {
    ctx.liveState = state;
    ctx.liveDetail = detail || "";
    const pill = host.querySelector(".live");
    if (pill) updatePill(pill);
    // A refused feed often means a session that ended: a read says which (401 → sign in).
    if (state === "refused") refresh();
  }

  function updatePill(pill) {
    pill.dataset.state = ctx.liveState;
    const words = LIVE_WORDS[ctx.liveState] || ctx.liveState;
    pill.textContent = ctx.revision === null ? words : `${words} · revision ${ctx.revision}`;
    pill.title = ctx.liveDetail;
  }

  function head() {
    const coordinatorNow = ctx.coordinator;
    const pill = h("span", { class: "live", role: "status", "aria-live": "polite" });
    updatePill(pill);
    return h(
      "div",
      { class: "coord-head" },
      h("h2", {}, coordinatorNow.displayName || coordinatorNow.coordinatorId),
      badge(coordinatorNow.scope === "GLOBAL" ? "warn" : "neutral", coordinatorNow.scope === "GLOBAL" ? "global" : coordinatorNow.orgSlug),
      coordinatorNow.enabled === false ? badge("bad", "switched off") : null,
      ctx.canDecide ? null : badge("neutral", "read only"),
      pill,
    );
  }

  // The board, built once: its parts are replaced on each render, the toolbar never is.
  let board = null;
  const slots = {};

  function buildBoard() {
    const titleId = `lanes-${cid}-title`;
    slots.head = h("div");
    slots.banner = h("div", { hidden: true });
    slots.loading = h("p", { class: "empty" }, "Loading…");
    slots.attention = h("div");
    slots.summary = h("span", { class: "hint", role: "status" });
    slots.lanes = h("div", { class: "stack", id: `lane-list-${cid}` });
    slots.side = h("div", { class: "board-side" });
    board = h(
      "div",
      { class: "board", hidden: true },
      h(
        "div",
        { class: "board-main" },
        slots.attention,
        h(
          "section",
          { class: "stack", "aria-labelledby": titleId },
          h("div", { class: "section-head" }, h("h3", { id: titleId }, "Lanes"), slots.summary),
          toolbar.element,
          slots.lanes,
        ),
      ),
      h("div", { class: "board-side" }, slots.side, webhooks?.element),
    );
    fill(host, slots.head, slots.banner, slots.loading, board);
  }

  function swap(name, next) {
    slots[name].replaceWith(next);
    slots[name] = next;
  }

  function showMore() {
    ctx.filters.shown += PAGE_SIZE;
    render();
  }

  function render() {
    if (closed) return;
    if (!board) buildBoard();
    const focusKey = host.contains(document.activeElement)
      ? document.activeElement.closest("[data-key], [id]")?.getAttribute("data-key") || null
      : null;
    swap("head", head());
    slots.banner.hidden = !ctx.error;
    fill(slots.banner, ctx.error ? h("div", { class: "banner error", role: "alert" }, ctx.error) : null);
    slots.loading.hidden = Boolean(ctx.view || ctx.error);
    board.hidden = !ctx.view;
    if (ctx.view) {
      const view = ctx.view;
      const lanes = view.lanes || [];
      const matching = filterLanes(lanes, ctx.filters, lanesWaitingOnHuman(view));
      revealFollowed(matching);
      toolbar.update(lanes);
      swap("attention", renderAttention(ctx, view));
      slots.summary.textContent = lanesSummary(matching, lanes, Boolean(view.nextPageToken));
      fill(slots.lanes, renderLanes(ctx, matching, lanes.length, ctx.filters, { onMore: showMore }));
      swap(
        "side",
        h(
          "div",
          { class: "board-side" },
          renderCapacity(ctx, view),
          renderSpend(ctx, view),
          renderWorkers(ctx, view),
          renderDigest(ctx),
          renderTrackers(ctx),
        ),
      );
    }
    ctx.flash.clear();
    keepFollowedInView();
    if (focusKey) host.querySelector(`[data-key="${CSS.escape(focusKey)}"]`)?.focus();
    if (landing && ctx.view) landOnDecision();
  }

  /** Scroll to the linked lane and focus the linked item's first decision (its Approve), else
   * the item, else the lane; once, on the first drawing that has the view. */
  function landOnDecision() {
    const { laneId, itemId } = landing;
    landing = null;
    const card = document.getElementById(`lane-${laneId}`);
    if (!card) return;
    const item = itemId ? CSS.escape(itemId) : "";
    const target =
      (item && card.querySelector(`[data-decision][data-item="${item}"]`)) ||
      (item && card.querySelector(`#item-${item}`)) ||
      card;
    if (!target.matches("button, a, [tabindex]")) target.setAttribute("tabindex", "-1");
    card.scrollIntoView({ block: "start" });
    target.focus({ preventScroll: true });
  }

  /** A lane a person follows stays on the page of cards (if the filters keep it). */
  function revealFollowed(matching) {
    if (!followed) return;
    const at = matching.findIndex((lane) => lane.laneId === followed.laneId);
    if (at >= ctx.filters.shown) ctx.filters.shown = at + 1;
  }

  const ticker = setInterval(() => {
    if (document.visibilityState === "visible" && !document.querySelector("dialog[open]")) render();
  }, CLOCK_TICK_MS);

  let feed = null;
  render();
  Promise.all([readView().then(readSpend), readDigest(), readTrackers(), webhooks?.refresh()]).then(() => {
    render();
    if (closed) return;
    feed = follow(cid, { since: () => ctx.revision, onFrame, onStatus });
  });

  return {
    close() {
      closed = true;
      clearInterval(ticker);
      feed?.close();
      webhooks?.close();
    },
    refresh,
  };
}
