// What the work coordinator's attempts spent: each lane's cost (from the view's laneUsage, or
// the lane's own usage when it was read alone) against the lane's budget if it has one, today's
// spend (the view's dayUsage) against the day budget if there is one (workCoordinator.budget),
// and a small chart of the last 14 UTC days (GET …/usage?groupBy=DAY).
//
// Live without polling: each read of the view (the feed's events cause them) brings dayUsage,
// which redraws today's bar; the 14 days are read again only when the server's day changes.
// Usage a heartbeat reports writes no event, so it shows with the next change the feed tells.

import { api, coordinatorPath } from "./api.js";
import { h, section, shiftDay, utcDay } from "./dom.js";

export const DAYS_SHOWN = 14;

/** Micro-dollars (a number or an int64 string) → "$1.23" ("$0.0042" under a cent). */
export function formatCost(micros) {
  const dollars = Number(micros || 0) / 1e6;
  if (dollars > 0 && dollars < 0.01) return `$${dollars.toFixed(4)}`;
  return `$${dollars.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
}

/** 12345 → "12,345". */
function formatTokens(tokens) {
  return Number(tokens || 0).toLocaleString("en-US");
}

/** Lane id → {costMicros, tokens} it spent: the view's ``laneUsage``, or a lane's own
 * ``usage`` (read alone, it may be newer); spend only grows, so the larger figure is the
 * current one. */
export function laneSpend(view) {
  const spend = new Map();
  const larger = (laneId, total) => {
    const held = spend.get(laneId) || { costMicros: 0, tokens: 0 };
    spend.set(laneId, {
      costMicros: Math.max(held.costMicros, Number(total?.costMicros || 0)),
      tokens: Math.max(held.tokens, Number(total?.tokens || 0)),
    });
  };
  for (const total of view?.laneUsage || []) larger(total.key, total);
  for (const lane of view?.lanes || []) if (lane.usage) larger(lane.laneId, lane.usage);
  return spend;
}

/** What a budget's limits say of ``used``: ["$1.20 of $1.00", …] and whether a limit is
 * reached (the budget is spent: its work waits behind the ``budget`` gate). ``costLimit`` and
 * ``tokenLimit`` are unset when the budget has no such limit. */
export function budgetTerms(used, costLimit, tokenLimit) {
  const terms = [];
  let spent = false;
  if (costLimit !== undefined && costLimit !== null) {
    terms.push(`${formatCost(used.costMicros)} of ${formatCost(costLimit)}`);
    spent ||= used.costMicros >= Number(costLimit);
  }
  if (tokenLimit !== undefined && tokenLimit !== null) {
    terms.push(`${formatTokens(used.tokens)} of ${formatTokens(tokenLimit)} tokens`);
    spent ||= used.tokens >= Number(tokenLimit);
  }
  return { terms, spent };
}

/** A lane card's cost line ("spent $1.20", or with a budget "spent $1.20 of $1.00 budget ·
 * budget spent"), or null when the lane spent nothing and has no budget. */
export function laneCostNode(spend, lane) {
  const used = spend.get(lane.laneId) || { costMicros: 0, tokens: 0 };
  const budget = lane.budget || {};
  const { terms, spent } = budgetTerms(used, budget.costMicros, budget.tokens);
  if (!terms.length && !used.costMicros) return null;
  const dataset = { costMicros: String(used.costMicros) };
  if (!terms.length) return h("span", { class: "cost", dataset }, `spent ${formatCost(used.costMicros)}`);
  if (budget.costMicros === undefined) terms.unshift(formatCost(used.costMicros));
  dataset.budgetSpent = String(spent);
  return h(
    "span",
    { class: spent ? "cost budget spent" : "cost budget", dataset },
    `spent ${terms.join(", ")} budget`,
    spent ? h("strong", { class: "budget-spent" }, " · budget spent") : null,
  );
}

/** The Spend card's day-budget line ("Day budget: $0.50 of $1.00 used"), or null without one. */
function dayBudgetNode(view) {
  const budget = view?.workCoordinator?.budget || {};
  const today = view?.dayUsage || {};
  const used = { costMicros: Number(today.costMicros || 0), tokens: Number(today.tokens || 0) };
  const { terms, spent } = budgetTerms(used, budget.dailyCostMicros, budget.dailyTokens);
  if (!terms.length) return null;
  return h(
    "p",
    { class: spent ? "spend-budget spent" : "spend-budget", dataset: { budgetSpent: String(spent) } },
    `Day budget: ${terms.join(", ")} used`,
    spent ? h("strong", { class: "budget-spent" }, " · spent: work waits until it is raised") : null,
  );
}

/** The server's day of ``view`` (its dayUsage is keyed by it), else this machine's UTC day. */
export function spendDay(view) {
  return view?.dayUsage?.key || utcDay();
}

/** The 14 days up to ``day``, as {day, costMicros, tokens}, read once per day change. */
export async function readSpendDays(cid, day) {
  const answer = await api(coordinatorPath(cid, "usage"), { params: { groupBy: "DAY", day } });
  const byDay = new Map((answer.groups || []).map((group) => [group.key, group]));
  const days = [];
  for (let back = DAYS_SHOWN - 1; back >= 0; back -= 1) {
    const key = shiftDay(day, -back);
    const group = byDay.get(key);
    days.push({ day: key, costMicros: Number(group?.costMicros || 0), tokens: Number(group?.tokens || 0) });
  }
  return days;
}

/** ``days`` with today's figure taken from the view (it is at least as new as the chart). */
function withToday(days, view) {
  const today = view?.dayUsage;
  if (!today?.key) return days;
  return days.map((entry) =>
    entry.day === today.key
      ? { ...entry, costMicros: Math.max(entry.costMicros, Number(today.costMicros || 0)), tokens: Math.max(entry.tokens, Number(today.tokens || 0)) }
      : entry,
  );
}

function shortDay(day) {
  const date = new Date(`${day}T00:00:00Z`);
  return date.toLocaleDateString("en-US", { month: "short", day: "numeric", timeZone: "UTC" });
}

/** The side column's "Spend" card: today's figure and the 14-day chart, with a table as its
 * text alternative (the bars themselves are hidden from screen readers). */
export function renderSpend(ctx, view) {
  const id = `spend-${ctx.cid}`;
  const today = view?.dayUsage || {};
  const day = spendDay(view);
  const todayLine = h(
    "p",
    { class: "spend-today" },
    h("strong", {}, formatCost(today.costMicros)),
    ` spent today (${day}, UTC) · ${formatTokens(today.tokens)} tokens`,
  );
  let chart;
  if (ctx.spendDaysError) {
    chart = h("p", { class: "empty", role: "alert" }, `The daily spend could not be read: ${ctx.spendDaysError}`);
  } else if (!ctx.spendDays) {
    chart = h("p", { class: "empty" }, "Loading the last 14 days…");
  } else {
    const days = withToday(ctx.spendDays, view);
    const most = Math.max(...days.map((entry) => entry.costMicros), 0);
    const total = days.reduce((sum, entry) => sum + entry.costMicros, 0);
    const captionId = `${id}-caption`;
    const bars = h(
      "div",
      { class: "spend-chart", "aria-hidden": "true" },
      days.map((entry) => {
        const fill = h("span");
        // Sized through the CSSOM (the policy forbids inline style attributes, not this).
        fill.style.height = `${most ? Math.max(entry.costMicros ? 4 : 0, (100 * entry.costMicros) / most) : 0}%`;
        return h(
          "div",
          {
            class: entry.day === day ? "spend-day today" : "spend-day",
            title: `${entry.day}: ${formatCost(entry.costMicros)}`,
            dataset: { day: entry.day, costMicros: String(entry.costMicros) },
          },
          fill,
        );
      }),
    );
    const table = h(
      "table",
      { class: "visually-hidden", "aria-labelledby": captionId },
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Day (UTC)"), h("th", { scope: "col" }, "Cost"), h("th", { scope: "col" }, "Tokens"))),
      h(
        "tbody",
        {},
        days.map((entry) =>
          h("tr", {}, h("th", { scope: "row" }, entry.day), h("td", {}, formatCost(entry.costMicros)), h("td", {}, formatTokens(entry.tokens))),
        ),
      ),
    );
    chart = h(
      "figure",
      { class: "spend-figure" },
      h("figcaption", { id: captionId }, `Cost per day, last ${DAYS_SHOWN} days (UTC): ${formatCost(total)} in all`),
      bars,
      h("div", { class: "spend-axis", "aria-hidden": "true" }, h("span", {}, shortDay(days[0].day)), h("span", {}, "today")),
      table,
    );
  }
  return section("Spend", { id }, todayLine, dayBudgetNode(view), chart);
}
