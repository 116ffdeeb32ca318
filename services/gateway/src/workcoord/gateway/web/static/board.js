// What needs a human, and the lanes with their items: state, next action, gate, holder, and
// ``why`` on demand. Pure rendering from the view and the page's state (``ctx``).

import { approvalHint, itemBodies } from "./approval.js";
import { itemButton, itemDecisions, laneButton, laneDecisions, priorityButton, resolveButton } from "./decisions.js";
import { badge, count, h, relative, safeUrl, section, when, words } from "./dom.js";
import { HUMAN_STATES, PAGE_SIZE } from "./lanes.js";
import { laneCostNode } from "./spend.js";
import { renderWhy } from "./why.js";

// "Waiting on you" shows this many asks until the person asks for all of them.
const ASKS_SHOWN = 10;
// Finished states whose next action ("done", "live") says nothing the badge does not.
const SETTLED_ITEMS = new Set(["SUCCEEDED", "CANCELLED"]);
const SETTLED_LANES = new Set(["LIVE", "DONE", "CANCELLED"]);

/** Lease id → {lane, item, attempt}, for "who holds it". */
export function indexLeases(view) {
  const leases = new Map();
  const items = new Map();
  for (const lane of view.lanes || []) {
    for (const item of lane.items || []) {
      items.set(item.itemId, { lane, item });
      for (const attempt of item.attempts || []) {
        leases.set(attempt.leaseId, { lane, item, attempt });
      }
    }
  }
  return { leases, items };
}

/** "ship", or "parse (task)" when the key says something the kind does not. */
export function itemName(item) {
  const kind = words(item.kind);
  return item.key && item.key !== kind ? `${item.key} (${kind})` : kind;
}

function whyToggle(ctx, key, label, describedBy) {
  const open = ctx.why.has(key);
  return h(
    "button",
    {
      type: "button",
      class: "quiet",
      "aria-expanded": open ? "true" : "false",
      "aria-controls": `why-${key.replace(":", "-")}`,
      "aria-describedby": describedBy,
      dataset: { key: `why:${key}` },
      onclick: () => ctx.toggleWhy(key),
    },
    open ? `Hide ${label.toLowerCase()}` : label,
  );
}

function whyPanel(ctx, key, extra) {
  const entry = ctx.why.get(key);
  if (!entry) return null;
  const id = `why-${key.replace(":", "-")}`;
  if (entry.error) return h("div", { class: "why", id }, h("p", { role: "alert" }, entry.error));
  if (!entry.data) return h("div", { class: "why", id }, h("p", { class: "muted" }, "Loading…"));
  const panel = renderWhy(entry.data, { itemNames: ctx.itemNames });
  panel.id = id;
  if (entry.item) panel.append(itemBodies(entry.item));
  if (extra) panel.append(extra);
  return panel;
}

function decided(ctx) {
  return () => ctx.refresh();
}

/** After a decision taken in "Waiting on you": follow the lane it moved, to watch it go on. */
function decidedAndFollowed(ctx, laneId) {
  return () => {
    ctx.followLane(laneId);
    return ctx.refresh();
  };
}

// --- needs a human ------------------------------------------------------------------------

function askItem(ctx, lane, item) {
  const flash = ctx.flash.has(lane.laneId) ? " flash" : "";
  const name = itemName(item);
  let headline;
  let detail = null;
  if (item.state === "AWAITING_APPROVAL") {
    headline = `Approve ${name}`;
    detail = approvalHint(lane, item);
  } else if (item.state === "STOPPED") {
    headline = `Stopped: ${name}`;
    detail = item.stopReason;
  } else {
    headline = `Dead-lettered: ${name}`;
    detail = [words(item.deadLetterReason), item.lastError?.message].filter(Boolean).join(" — ");
  }
  const decisions = ctx.canDecide
    ? itemDecisions(item).map((verb) =>
        itemButton(ctx.cid, lane, item, verb, { onDone: decidedAndFollowed(ctx, lane.laneId) }),
      )
    : [];
  return h(
    "li",
    { class: `ask${flash}` },
    h("h4", {}, headline, badge(item.state)),
    h("p", {}, "Lane “", lane.title, "” · ", item.workerClass || "", " · updated ", when(item.updateTime)),
    detail instanceof Node ? detail : detail ? h("p", { class: "small" }, detail) : null,
    h("div", { class: "actions" }, decisions, whyToggle(ctx, `item:${item.itemId}`, "Why?")),
    whyPanel(ctx, `item:${item.itemId}`),
  );
}

function askPendingAction(ctx, action) {
  const lane = ctx.lanes.get(action.laneId);
  const ticket = action.ticket ? `${action.ticket.key} (${action.ticket.tracker})` : "";
  const description = `${words(action.kind)} ${ticket}`.trim();
  return h(
    "li",
    { class: "ask" },
    h("h4", {}, `Pending: ${description}`, badge(action.state)),
    h(
      "p",
      {},
      lane ? `Lane “${lane.title}” · ` : "",
      `owner ${action.owner || "—"} · ${action.attempts || 0} attempts`,
      action.nextAttemptTime ? [" · next try ", when(action.nextAttemptTime)] : null,
    ),
    action.lastError ? h("p", { class: "small" }, "Last error: ", action.lastError) : null,
    ctx.canDecide
      ? h("div", { class: "actions" }, resolveButton(ctx.cid, action, description, { onDone: decided(ctx) }))
      : null,
  );
}

function askEscalation(ctx, escalation) {
  const found = ctx.index.items.get(escalation.itemId);
  const lane = found?.lane || ctx.lanes.get(escalation.laneId);
  return h(
    "li",
    { class: "ask" },
    h("h4", {}, `Escalated: ${found ? itemName(found.item) : "item"}`, badge("warn", "escalated")),
    h(
      "p",
      {},
      lane ? `Lane “${lane.title}” · ` : "",
      escalation.reason || "",
      " · raised ",
      when(escalation.createTime),
    ),
    escalation.escalatedTo?.length ? h("p", { class: "small muted" }, "Sent to ", escalation.escalatedTo.join(", ")) : null,
  );
}

/** Approvals, stopped and dead-lettered items, open pending actions and escalations (the
 * first few, and all of them on request). */
export function renderAttention(ctx, view) {
  const asks = [];
  // Approvals first: they are what most often waits on a person.
  for (const wanted of HUMAN_STATES) {
    for (const lane of view.lanes || []) {
      if (lane.state !== "ACTIVE") continue;
      for (const item of lane.items || []) {
        if (item.state === wanted) asks.push([askItem, lane, item]);
      }
    }
  }
  for (const action of view.pendingActions || []) {
    if (action.state === "OPEN") asks.push([askPendingAction, action]);
  }
  for (const escalation of view.escalations || []) {
    if (escalation.open) asks.push([askEscalation, escalation]);
  }
  const shown = ctx.showAllAsks ? asks : asks.slice(0, ASKS_SHOWN);
  const title = ctx.canDecide ? "Waiting on you" : "Waiting on a human";
  const toggle =
    asks.length > ASKS_SHOWN
      ? h(
          "button",
          {
            type: "button",
            class: "wide",
            "aria-expanded": ctx.showAllAsks ? "true" : "false",
            dataset: { key: `asks-${ctx.cid}` },
            onclick: () => ctx.toggleAsks(),
          },
          ctx.showAllAsks ? "Show fewer" : `Show all ${asks.length}`,
        )
      : null;
  return section(
    [title, count(asks.length, true)],
    { id: `attention-${ctx.cid}`, className: asks.length ? "card attention" : "card attention calm" },
    asks.length
      ? h("ul", {}, shown.map(([render, ...args]) => render(ctx, ...args)))
      : h("p", { class: "empty" }, "Nothing waits on a human right now."),
    toggle,
  );
}

// --- lanes --------------------------------------------------------------------------------

function holderText(ctx, item) {
  if (!item.currentLeaseId) return null;
  const found = ctx.index.leases.get(item.currentLeaseId);
  const attempt = found?.attempt;
  if (!attempt) return `lease ${item.currentLeaseId}`;
  const agent = attempt.runIdentity?.agentId ? ` (${attempt.runIdentity.agentId})` : "";
  const expires = attempt.leaseExpireTime ? `, lease ends ${relative(attempt.leaseExpireTime)}` : "";
  return `held by ${attempt.workerId}${agent}${expires}`;
}

function itemRow(ctx, lane, item) {
  const decisions = ctx.canDecide ? itemDecisions(item) : [];
  const inline = decisions.filter((verb) => verb !== "cancel" || item.state === "STOPPED");
  const later = decisions.filter((verb) => !inline.includes(verb));
  const meta = [
    item.workerClass,
    `attempt ${item.attemptCount || 0}`,
    holderText(ctx, item),
    item.notBefore && Date.parse(item.notBefore) > Date.now() ? `retry ${relative(item.notBefore)}` : null,
    item.stopReason ? `stopped: ${item.stopReason}` : null,
    item.deadLetterReason ? `dead: ${words(item.deadLetterReason)}` : null,
    item.lastError?.message ? `last error: ${item.lastError.message}` : null,
  ].filter(Boolean);
  const key = `item:${item.itemId}`;
  const nameId = `item-${item.itemId}-name`;
  const extra = ctx.canDecide && later.length
    ? h("div", { class: "actions" }, later.map((verb) => itemButton(ctx.cid, lane, item, verb, { onDone: decided(ctx) })))
    : null;
  return h(
    "li",
    { class: "item", id: `item-${item.itemId}`, dataset: { state: item.state } },
    h(
      "div",
      { class: "item-top" },
      h(
        "div",
        { class: "item-text" },
        h(
          "div",
          { class: "item-line" },
          h("span", { class: "item-name", id: nameId }, itemName(item)),
          badge(item.state),
          item.nextAction && !SETTLED_ITEMS.has(item.state) ? h("span", { class: "gate next" }, item.nextAction) : null,
        ),
        h("div", { class: "meta" }, meta.map((text) => h("span", {}, text))),
      ),
      h(
        "div",
        { class: "item-actions" },
        inline.map((verb) => itemButton(ctx.cid, lane, item, verb, { onDone: decided(ctx) })),
        whyToggle(ctx, key, "Why?", nameId),
      ),
    ),
    whyPanel(ctx, key, extra),
  );
}

function laneMeta(lane, spend) {
  const parts = [words(lane.template), `priority ${lane.priority || 0}`];
  const cost = laneCostNode(spend, lane);
  if (cost) parts.push(cost);
  for (const ticket of lane.tickets || []) {
    const url = safeUrl(ticket.url || "");
    const text = `${ticket.key}${ticket.state ? ` (${words(ticket.state)})` : ""}`;
    parts.push(url ? h("a", { href: url, rel: "noopener noreferrer", target: "_blank" }, text) : text);
  }
  if (lane.failRounds) parts.push(`failed reviews: ${lane.failRounds}`);
  if (lane.closeReason) parts.push(`closed: ${lane.closeReason}`);
  if (lane.receipt?.version || lane.receipt?.environment) {
    const text = `shipped ${lane.receipt.version || ""} to ${lane.receipt.environment || "?"}`;
    const url = safeUrl(lane.receipt.url || "");
    parts.push(url ? h("a", { href: url, rel: "noopener noreferrer", target: "_blank" }, text) : text);
  }
  const openBlockers = (lane.blockers || []).filter((blocker) => blocker.open);
  if (openBlockers.length) parts.push(`${openBlockers.length} open blocker(s)`);
  parts.push(h("span", {}, "updated ", when(lane.updateTime)));
  return h("div", { class: "meta" }, parts.map((part) => h("span", {}, part)));
}

function laneCard(ctx, lane) {
  const finished = lane.state !== "ACTIVE";
  const flash = ctx.flash.has(lane.laneId) ? " flash" : "";
  const titleId = `lane-${lane.laneId}-title`;
  const key = `lane:${lane.laneId}`;
  const decisions = ctx.canDecide
    ? laneDecisions(lane).map((verb) => laneButton(ctx.cid, lane, verb, { onDone: decided(ctx) }))
    : [];
  if (ctx.canDecide && !finished) decisions.unshift(priorityButton(ctx.cid, lane, { onDone: decided(ctx) }));
  return h(
    "article",
    {
      class: `card lane${finished ? " finished" : ""}${flash}`,
      id: `lane-${lane.laneId}`,
      "aria-labelledby": titleId,
      dataset: { state: lane.state },
    },
    h(
      "header",
      {},
      h(
        "div",
        { class: "lane-title" },
        h("h3", { id: titleId }, lane.title),
        badge(lane.state),
        lane.paused ? badge("warn", "paused") : null,
      ),
      lane.nextAction && !SETTLED_LANES.has(lane.state) ? h("div", { class: "next" }, lane.nextAction) : null,
      laneMeta(lane, ctx.spend),
    ),
    h("ol", { class: "items", "aria-label": `Items of ${lane.title}` }, (lane.items || []).map((item) => itemRow(ctx, lane, item))),
    h("div", { class: "lane-actions actions" }, whyToggle(ctx, key, "Why this lane?", titleId)),
    whyPanel(ctx, key, decisions.length ? h("div", { class: "actions" }, decisions) : null),
  );
}

/**
 * A page of ``matching`` lanes (newest first): the first ``filters.shown`` cards and a button
 * that shows the next page. ``total``: how many lanes the view holds before filtering.
 */
export function renderLanes(ctx, matching, total, filters, { onMore }) {
  const shown = matching.slice(0, filters.shown);
  const body = [];
  if (!total) body.push(h("p", { class: "empty" }, "No lanes yet. They appear here the moment one is created."));
  else if (!matching.length) body.push(h("p", { class: "empty" }, "No lane matches. Change the search or the filters."));
  body.push(shown.map((lane) => laneCard(ctx, lane)));
  const left = matching.length - shown.length;
  if (left > 0) {
    body.push(
      h(
        "button",
        { type: "button", class: "wide more-lanes", dataset: { key: `more-${ctx.cid}` }, onclick: onMore },
        `Show ${Math.min(left, PAGE_SIZE)} more (${shown.length} of ${matching.length} shown)`,
      ),
    );
  }
  return body;
}

/** "12 of 1000 lanes · 40 active": what the filters left, for the section's head. */
export function lanesSummary(matching, lanes, truncated) {
  const active = lanes.filter((lane) => lane.state === "ACTIVE").length;
  const of = matching.length === lanes.length ? `${lanes.length}` : `${matching.length} of ${lanes.length}`;
  return `${of}${truncated ? "+" : ""} lanes · ${active} active`;
}
