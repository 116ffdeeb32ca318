// ``why`` for a lane or an item: the gates holding it and since when, its attempts with their
// run identities (the API never returns tokens or inputs), and the events that led here.

import { badge, h, when, words } from "./dom.js";
import { connectionHealth } from "./trackers.js";

const GATES = {
  DISABLED: "coordination is switched off",
  PAUSED: "the lane is paused",
  BLOCKED: "the lane has open blockers",
  DEPENDENCIES: "waiting for upstream items",
  APPROVAL: "waiting for a human approval",
  BACKOFF: "retry backoff",
  CAPACITY: "its class is at capacity",
  EXCLUSIVE: "its exclusive key is held",
  PLACEMENT: "no worker matching its placement is asking",
  NOBODY_ASKING: "ready, but no worker is asking",
  STOPPED: "stopped for a human",
};

function kv(pairs) {
  return h(
    "div",
    { class: "kv" },
    pairs
      .filter(([, value]) => value !== undefined && value !== null && value !== "")
      .map(([key, value]) => h("span", {}, h("b", {}, key), value)),
  );
}

function gates(list) {
  if (!list?.length) return h("p", { class: "muted" }, "No gate holds it.");
  return h(
    "ul",
    {},
    list.map((gate) =>
      h(
        "li",
        {},
        h("strong", {}, words(gate.gate)),
        ` — ${gate.detail || GATES[gate.gate] || ""} `,
        gate.since ? h("span", { class: "muted" }, "since ", when(gate.since)) : null,
      ),
    ),
  );
}

/** One attempt: number, status, who leased it, the run identity it reported. */
export function attemptLine(attempt) {
  const run = attempt.runIdentity || {};
  return h(
    "li",
    {},
    h(
      "div",
      { class: "row" },
      h("strong", {}, `Attempt ${attempt.attempt}`),
      badge(attempt.status === "COMPLETED" ? "SUCCEEDED" : attempt.status, words(attempt.status)),
      attempt.createTime ? h("span", { class: "muted small" }, "leased ", when(attempt.createTime)) : null,
    ),
    kv([
      ["worker", attempt.workerId],
      ["principal", attempt.principal],
      ["agent", run.agentId],
      ["engine", run.engine],
      ["account", run.account],
      ["host", run.hostname],
      ["pid", run.pid],
      ["branch", run.branch],
      ["worktree", run.worktreePath],
      ["lease", attempt.leaseId],
    ]),
    attempt.progress ? h("p", { class: "small" }, "Progress: ", attempt.progress) : null,
    attempt.error?.message
      ? h("p", { class: "small" }, `Error${attempt.error.type ? ` (${attempt.error.type})` : ""}: `, attempt.error.message)
      : null,
    attempt.endTime ? h("p", { class: "muted small" }, "ended ", when(attempt.endTime)) : null,
  );
}

function attempts(list) {
  if (!list?.length) return h("p", { class: "muted" }, "No attempt yet.");
  return h("ul", {}, list.map(attemptLine));
}

function events(list) {
  if (!list?.length) return h("p", { class: "muted" }, "No event.");
  const shown = list.slice(-15);
  return h(
    "ul",
    {},
    shown.map((event) =>
      h(
        "li",
        { class: "small" },
        h("span", { class: "mono" }, `#${event.revision} `),
        h("strong", {}, words(event.type)),
        " ",
        when(event.time),
        event.actor ? h("span", { class: "muted" }, ` by ${event.actor}`) : null,
      ),
    ),
    list.length > shown.length ? h("li", { class: "muted small" }, `${list.length - shown.length} earlier events not shown`) : null,
  );
}

/** The explanation of an item (``itemId`` set) or of a lane with its items. */
export function renderWhy(explanation, { itemNames = new Map() } = {}) {
  const head = kv([
    ["state", words(explanation.state)],
    ["next", explanation.nextAction],
  ]);
  const sections = explanation.itemId
    ? [
        ["Gates", gates(explanation.gates)],
        ["Attempts", attempts(explanation.attempts)],
        ["Events", events(explanation.events)],
      ]
    : [
        ["Lane gates", gates(explanation.gates)],
        ["Items", laneItems(explanation.items || [], itemNames)],
        ...(explanation.stuckClosures?.length ? [["Ticket closures not done", stuckClosures(explanation.stuckClosures)]] : []),
        ["Events", events(explanation.events)],
      ];
  return h(
    "div",
    { class: "why" },
    head,
    sections.map(([title, body]) => [h("h5", {}, title), body]),
  );
}

/** A lane's items, each with its state, next action and open gates. */
function laneItems(items, itemNames) {
  return h(
    "ul",
    {},
    items.map((item) =>
      h(
        "li",
        {},
        h("div", { class: "row" }, h("strong", {}, itemNames.get(item.itemId) || item.itemId), badge(item.state), item.nextAction ? h("span", {}, `→ ${item.nextAction}`) : null),
        item.gates?.length ? gates(item.gates) : null,
      ),
    ),
  );
}

/** Open ticket closures: the ticket, attempts and last error, and the connection's health. */
function stuckClosures(list) {
  return h(
    "ul",
    {},
    list.map(({ pendingAction: action, trackerConnection: connection }) =>
      h(
        "li",
        {},
        h(
          "div",
          { class: "row" },
          h("strong", {}, `${action.ticket?.tracker || ""} ${action.ticket?.key || ""}`),
          badge("bad", `${action.attempts || 0} attempts`),
          action.nextAttemptTime ? h("span", { class: "muted small" }, "next ", when(action.nextAttemptTime)) : null,
        ),
        action.lastError ? h("p", { class: "small" }, action.lastError) : null,
        connection
          ? [h("p", { class: "small" }, `through ${connection.tracker} connection ${connection.trackerId} (${connection.credentialFingerprint})`), connectionHealth(connection)]
          : h("p", { class: "small muted" }, "through the installation-wide tracker"),
      ),
    ),
  );
}
