// The human decisions: approve, deny, resume, retry (redrive), cancel; pause, resume and cancel
// a lane, set its priority; resolve a pending action. Each is one call to the existing API, after a confirmation.
// An approval's and a denial's dialog shows the facts of the decision first (approval.js).
// Buttons are only drawn for people who may decide; the API refuses everyone else anyway.

import { api, coordinatorPath } from "./api.js";
import { factsPanel } from "./approval.js";
import { confirmAction } from "./dialog.js";
import { h, toast, words } from "./dom.js";

const ITEM = {
  approve: {
    label: "Approve",
    tone: "primary",
    done: "Approved",
    effect: "Approving queues it for a worker right away.",
    field: { label: "Note", required: false },
  },
  deny: {
    label: "Deny",
    tone: "danger",
    done: "Denied",
    effect: "Denying cancels the item and closes the lane out for a human.",
    field: { label: "Reason", required: true },
  },
  resume: {
    label: "Resume",
    tone: "primary",
    done: "Resumed",
    effect: "Resuming queues it again.",
    field: { label: "Note", required: false },
  },
  retry: {
    label: "Retry",
    tone: "primary",
    done: "Queued again",
    effect: "Retrying queues it again with a fresh attempt budget.",
    field: { label: "Note", required: false },
  },
  cancel: {
    label: "Cancel item",
    tone: "danger",
    done: "Cancelled",
    effect: "Cancelling means it will not run; a live attempt loses its lease.",
    field: { label: "Reason", required: false },
  },
};

const LANE = {
  pause: {
    label: "Pause lane",
    tone: "primary",
    done: "Paused",
    effect: "No item of the lane is leased until it is resumed. Running work continues.",
  },
  resume: { label: "Resume lane", tone: "primary", done: "Resumed", effect: "Its items can be leased again." },
  cancel: {
    label: "Cancel lane",
    tone: "danger",
    done: "Cancelled",
    effect: "Every unfinished item of the lane is cancelled.",
  },
};

const UNFINISHED = new Set(["WAITING", "QUEUED", "LEASED", "RUNNING", "AWAITING_APPROVAL", "STOPPED"]);

/** The decisions open for an item in its state, most likely first. */
export function itemDecisions(item) {
  switch (item.state) {
    case "AWAITING_APPROVAL":
      return ["approve", "deny"];
    case "STOPPED":
      return ["resume", "cancel"];
    case "DEAD":
      return ["retry"];
    default:
      return UNFINISHED.has(item.state) ? ["cancel"] : [];
  }
}

/** The decisions open for a lane. */
export function laneDecisions(lane) {
  if (lane.state !== "ACTIVE") return [];
  return [lane.paused ? "resume" : "pause", "cancel"];
}

function itemName(item) {
  const kind = words(item.kind);
  return item.key && item.key !== kind ? `${item.key} (${kind})` : kind;
}

/** A button deciding ``verb`` on ``item`` of ``lane``. */
export function itemButton(coordinatorId, lane, item, verb, { onDone } = {}) {
  const spec = ITEM[verb];
  const name = itemName(item);
  return h(
    "button",
    {
      type: "button",
      class: spec.tone === "danger" ? "danger" : "primary",
      dataset: { decision: verb, item: item.itemId, key: `decide:${verb}:${item.itemId}` },
      "aria-label": `${spec.label.replace(" item", "")} ${name} of lane ${lane.title}`,
      onclick: async () => {
        const result = await confirmAction({
          title: `${spec.label.replace(" item", "")} ${name}?`,
          body: [
            h("p", {}, `Lane “${lane.title}”.`),
            h("p", {}, spec.effect),
            verb === "approve" || verb === "deny" ? factsPanel(coordinatorId, lane, item) : null,
          ],
          confirmLabel: spec.label,
          tone: spec.tone,
          field: spec.field,
          perform: (text) =>
            api(coordinatorPath(coordinatorId, "lanes", lane.laneId, "items", item.itemId, verb), {
              method: "POST",
              body: text ? { note: text } : {},
            }),
        });
        if (result) {
          toast(`${spec.done}: ${name} · ${lane.title}`);
          onDone?.(result);
        }
      },
    },
    spec.label,
  );
}

/** A button deciding ``verb`` on ``lane``. */
export function laneButton(coordinatorId, lane, verb, { onDone } = {}) {
  const spec = LANE[verb];
  return h(
    "button",
    {
      type: "button",
      class: spec.tone === "danger" ? "danger" : "primary",
      dataset: { decision: `lane-${verb}`, lane: lane.laneId, key: `lane-${verb}:${lane.laneId}` },
      "aria-label": `${spec.label} ${lane.title}`,
      onclick: async () => {
        const result = await confirmAction({
          title: `${spec.label.replace(" lane", "")} “${lane.title}”?`,
          body: h("p", {}, spec.effect),
          confirmLabel: spec.label,
          tone: spec.tone,
          field: { label: "Reason", required: false },
          perform: (text) =>
            api(coordinatorPath(coordinatorId, "lanes", lane.laneId, verb), {
              method: "POST",
              body: text ? { reason: text } : {},
            }),
        });
        if (result) {
          toast(`${spec.done}: ${lane.title}`);
          onDone?.(result);
        }
      },
    },
    spec.label,
  );
}

/** A button setting an ACTIVE lane's priority (PATCH with the lane's etag): the next Lease
 * honours it. */
export function priorityButton(coordinatorId, lane, { onDone } = {}) {
  const current = lane.priority || 0;
  return h(
    "button",
    {
      type: "button",
      class: "primary",
      dataset: { decision: "lane-priority", lane: lane.laneId, key: `lane-priority:${lane.laneId}` },
      "aria-label": `Set the priority of ${lane.title}`,
      onclick: async () => {
        const result = await confirmAction({
          title: `Set the priority of “${lane.title}”?`,
          body: h(
            "p",
            {},
            `Now ${current}. Higher runs first (0 to 100); its queued items follow at the next lease.`,
          ),
          confirmLabel: "Set priority",
          field: { label: "New priority (0 to 100)", required: true },
          perform: (text) => {
            const wanted = Number.parseInt(text, 10);
            return api(coordinatorPath(coordinatorId, "lanes", lane.laneId), {
              method: "PATCH",
              params: { updateMask: "priority" },
              body: { priority: Number.isNaN(wanted) ? text : wanted, etag: lane.etag },
            });
          },
        });
        if (result) {
          toast(`Priority ${result.priority || 0}: ${lane.title}`);
          onDone?.(result);
        }
      },
    },
    "Set priority",
  );
}

/** A button resolving a pending action by hand. */
export function resolveButton(coordinatorId, action, description, { onDone } = {}) {
  return h(
    "button",
    {
      type: "button",
      class: "primary",
      dataset: { decision: "resolve", action: action.actionId, key: `resolve:${action.actionId}` },
      "aria-label": `Resolve: ${description}`,
      onclick: async () => {
        const result = await confirmAction({
          title: "Resolve this pending action?",
          body: [
            h("p", {}, description),
            h("p", {}, "It stops being retried and leaves the digest."),
          ],
          confirmLabel: "Resolve",
          field: { label: "How it was resolved", required: true },
          perform: (text) =>
            api(coordinatorPath(coordinatorId, "pending-actions", action.actionId, "resolve"), {
              method: "POST",
              body: { resolution: text },
            }),
        });
        if (result) {
          toast(`Resolved: ${description}`);
          onDone?.(result);
        }
      },
    },
    "Resolve",
  );
}
