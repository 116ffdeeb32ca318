// The side column: capacity in use per class and who holds it, workers and their live leases,
// and the digest of one UTC day.

import { itemName } from "./board.js";
import { badge, count, h, relative, section, shiftDay, utcDay, when, words } from "./dom.js";

const LIVE = new Set(["LEASED", "RUNNING"]);

function holder(ctx, leaseId) {
  const found = ctx.index.leases.get(leaseId);
  if (!found) return h("li", {}, `lease ${leaseId}`);
  const { lane, item, attempt } = found;
  const agent = attempt.runIdentity?.agentId ? ` · ${attempt.runIdentity.agentId}` : "";
  return h("li", {}, `${itemName(item)} of “${lane.title}” — ${attempt.workerId}${agent}`);
}

/** Capacity per class: in use of capacity, queued, and the leases holding it. */
export function renderCapacity(ctx, view) {
  const classes = view.capacity || [];
  const used = classes.reduce((total, usage) => total + (usage.inUse || 0), 0);
  return section(
    "Capacity",
    { id: `capacity-${ctx.cid}`, extra: h("span", { class: "hint" }, `${used} in use`) },
    classes.length
      ? h(
          "ul",
          {},
          classes.map((usage) => {
            const inUse = usage.inUse || 0;
            const capacity = usage.capacity || 0;
            const fill = h("span");
            fill.style.width = `${capacity ? Math.min(100, (100 * inUse) / capacity) : 0}%`;
            return h(
              "li",
              { class: "cap" },
              h(
                "div",
                { class: "cap-head" },
                h("strong", {}, usage.workerClass),
                h("span", {}, `${inUse} / ${capacity} in use`, usage.queued ? ` · ${usage.queued} queued` : ""),
              ),
              h(
                "div",
                {
                  class: capacity && inUse >= capacity ? "bar full" : "bar",
                  role: "img",
                  "aria-label": `${usage.workerClass}: ${inUse} of ${capacity} in use`,
                },
                fill,
              ),
              usage.leaseIds?.length ? h("ul", { class: "holders" }, usage.leaseIds.map((id) => holder(ctx, id))) : null,
            );
          }),
        )
      : h("p", { class: "empty" }, "No worker class is configured."),
  );
}

/** Workers with the live leases they hold. */
export function renderWorkers(ctx, view) {
  const workers = view.workers || [];
  const held = new Map();
  for (const { lane, item, attempt } of ctx.index.leases.values()) {
    if (!LIVE.has(attempt.status) || item.currentLeaseId !== attempt.leaseId) continue;
    const list = held.get(attempt.workerId) || [];
    list.push({ lane, item, attempt });
    held.set(attempt.workerId, list);
  }
  return section(
    ["Workers", count(workers.length)],
    { id: `workers-${ctx.cid}` },
    workers.length
      ? h(
          "ul",
          { class: "list" },
          workers.map((worker) => {
            const leases = held.get(worker.workerId) || [];
            const labels = Object.entries(worker.labels || {}).map(([key, value]) => `${key}=${value}`);
            return h(
              "li",
              {},
              h(
                "div",
                { class: "row" },
                h("strong", {}, worker.workerId),
                // One badge per class served (a worker id may serve several).
                (worker.workerClasses?.length ? worker.workerClasses : [worker.workerClass]).map((workerClass) =>
                  badge("neutral", workerClass),
                ),
                worker.fence ? badge("bad", "fenced") : null,
              ),
              worker.fence
                ? h(
                    "div",
                    { class: "meta" },
                    h("span", {}, worker.fence.reason),
                    worker.fence.expireTime ? h("span", {}, "lifts ", relative(worker.fence.expireTime)) : null,
                  )
                : null,
              h(
                "div",
                { class: "meta" },
                h("span", {}, `${leases.length} live lease${leases.length === 1 ? "" : "s"}`),
                h("span", {}, "seen ", when(worker.observeTime)),
                labels.length ? h("span", {}, labels.join(", ")) : null,
              ),
              leases.length
                ? h(
                    "ul",
                    { class: "holders" },
                    leases.map(({ lane, item, attempt }) =>
                      h(
                        "li",
                        {},
                        `${itemName(item)} of “${lane.title}” · ${words(attempt.status)}`,
                        attempt.leaseExpireTime ? ` · ends ${relative(attempt.leaseExpireTime)}` : "",
                        attempt.progress ? ` · ${attempt.progress}` : "",
                      ),
                    ),
                  )
                : null,
            );
          }),
        )
      : h("p", { class: "empty" }, "No worker has reported yet."),
  );
}

/** The digest of ``ctx.digestDay`` (today by default; any earlier day on demand). */
export function renderDigest(ctx) {
  const today = utcDay();
  const day = ctx.digestDay;
  const input = h("input", {
    type: "date",
    id: `digest-day-${ctx.cid}`,
    value: day,
    max: today,
    "aria-label": "Digest day (UTC)",
    dataset: { key: "digest-day" },
    onchange: () => {
      if (input.value) ctx.showDigest(input.value);
    },
  });
  const nav = h(
    "div",
    { class: "digest-nav" },
    h("button", { type: "button", "aria-label": "Previous day", dataset: { key: "digest-prev" }, onclick: () => ctx.showDigest(shiftDay(day, -1)) }, "‹"),
    input,
    h(
      "button",
      {
        type: "button",
        "aria-label": "Next day",
        disabled: day >= today,
        dataset: { key: "digest-next" },
        onclick: () => ctx.showDigest(shiftDay(day, 1)),
      },
      "›",
    ),
  );
  let body;
  if (ctx.digestError) body = h("p", { role: "alert" }, ctx.digestError);
  else if (!ctx.digest) body = h("p", { class: "muted" }, "Loading…");
  else if (!ctx.digest.entries?.length) body = h("p", { class: "empty" }, "Nothing for this day.");
  else {
    body = h(
      "ul",
      { class: "list" },
      ctx.digest.entries.map((entry) => {
        const lane = ctx.lanes.get(entry.laneId);
        const found = ctx.index.items.get(entry.itemId);
        return h(
          "li",
          {},
          h("div", { class: "row" }, badge(entry.kind === "ESCALATED" ? "warn" : "bad", words(entry.kind)), when(entry.time)),
          h(
            "p",
            { class: "small" },
            lane ? `“${lane.title}”` : entry.laneId || "",
            found ? ` · ${itemName(found.item)}` : "",
            entry.reason ? ` — ${entry.reason}` : "",
          ),
        );
      }),
    );
  }
  // The owner is an e-mail address; when it is a user's, the page names that user.
  const digest = ctx.digest;
  const ownerName = digest?.ownerDisplayName ? `${digest.ownerDisplayName} <${digest.owner}>` : digest?.owner;
  const owner = ownerName ? h("span", { class: "hint", dataset: { key: "digest-owner" } }, `for ${ownerName}`) : null;
  return section(["Digest", day === today ? " · today" : ""], { id: `digest-${ctx.cid}`, extra: owner }, nav, body);
}
