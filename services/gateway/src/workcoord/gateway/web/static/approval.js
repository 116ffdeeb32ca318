// The facts of a decision on an item (an approval, a denial): what the approval card shows from
// the view (the review's verdict and summary, the checks, the branch), and what its dialog reads
// and shows before anyone decides: who requested the approval and when (the item's last
// APPROVAL_REQUESTED event), the lane's tickets, the inputs of the lane and the item (their
// bodies for org and platform admins, "hidden" for the others: the API says which), and the
// evidence of every other item of the lane that led there (summary, verdict, findings, checks,
// links, artifacts) with the run identity of its latest attempt (engine, agent, branch,
// worktree). `workcoord item approve ITEM --show` prints the same facts.

import { api, coordinatorPath } from "./api.js";
import { badge, h, safeUrl, when, words } from "./dom.js";

/** The run identity of an item's latest attempt that reported one, or null. */
export function latestRun(item) {
  const attempts = item.attempts || [];
  for (let index = attempts.length - 1; index >= 0; index -= 1) {
    if (attempts[index].runIdentity) return attempts[index].runIdentity;
  }
  return null;
}

function checksText(checks) {
  const passed = checks.filter((check) => check.status === "PASSED").length;
  const failed = checks.filter((check) => check.status === "FAILED").length;
  const parts = [`${passed} passed`];
  if (failed) parts.push(`${failed} failed`);
  return `checks: ${parts.join(", ")}`;
}

/** One short line of the evidence that led to ``item`` (from the view), for its card; null
 * when the lane holds none. */
export function approvalHint(lane, item) {
  const others = (lane.items || []).filter((other) => other.itemId !== item.itemId && other.evidence);
  if (!others.length) return null;
  const review = [...others].reverse().find((other) => other.evidence.verdict);
  const checks = others.flatMap((other) => other.evidence.checks || []);
  const built = others.map(latestRun).find((run) => run?.branch);
  const parts = [];
  if (review) parts.push(`review ${words(review.evidence.verdict)}${review.evidence.summary ? `: ${review.evidence.summary}` : ""}`);
  if (checks.length) parts.push(checksText(checks));
  if (built) parts.push(`branch ${built.branch}`);
  return parts.length ? h("p", { class: "small evidence-hint" }, parts.join(" · ")) : null;
}

/** The facts of the decision on ``itemId`` of ``laneId``: the lane as GetLane answers the
 * person (with the inputs they may read) and the item's APPROVAL_REQUESTED events. */
export async function loadFacts(coordinatorId, laneId, itemId) {
  const [lane, events] = await Promise.all([
    api(coordinatorPath(coordinatorId, "lanes", laneId)),
    api(coordinatorPath(coordinatorId, "events"), { params: { itemId, pageSize: 500 } }),
  ]);
  const requests = (events.events || []).filter((event) => event.type === "APPROVAL_REQUESTED");
  const item = (lane.items || []).find((found) => found.itemId === itemId);
  return { lane, item, request: requests[requests.length - 1] || null };
}

function inputsBlock(label, holder) {
  if (holder.inputsRedacted) {
    return h("p", { class: "redacted" }, `${label}: hidden — your role may not read them.`);
  }
  if (!holder.inputs || !Object.keys(holder.inputs).length) return h("p", { class: "muted" }, `${label}: none.`);
  return [h("p", {}, `${label}:`), h("pre", { class: "inputs" }, JSON.stringify(holder.inputs, null, 2))];
}

function link(url, text) {
  const safe = safeUrl(url || "");
  return safe ? h("a", { href: safe, rel: "noopener noreferrer", target: "_blank" }, text || url) : text || url;
}

function runLine(run) {
  if (!run) return null;
  const parts = [
    run.engine,
    run.agentId ? `agent ${run.agentId}` : null,
    run.branch ? `branch ${run.branch}` : null,
    run.worktreePath ? `worktree ${run.worktreePath}` : null,
    run.hostname ? `on ${run.hostname}` : null,
  ].filter(Boolean);
  return parts.length ? h("p", { class: "small run" }, parts.join(" · ")) : null;
}

function checkpointLines(item) {
  const lines = [];
  for (const attempt of item.attempts || []) {
    if (attempt.checkpoint?.summary) lines.push(h("p", { class: "small" }, `checkpoint: ${attempt.checkpoint.summary}`));
    else if (attempt.checkpointRedacted) lines.push(h("p", { class: "small redacted" }, "checkpoint: hidden"));
  }
  return lines;
}

function stepCard(step) {
  const evidence = step.evidence || {};
  const checks = evidence.checks || [];
  return h(
    "li",
    { class: "step", dataset: { kind: step.kind, item: step.itemId } },
    h(
      "h4",
      {},
      step.key && step.key !== words(step.kind) ? `${step.key} (${words(step.kind)})` : words(step.kind),
      badge(step.state),
      evidence.verdict ? badge(evidence.verdict === "PASS" ? "SUCCEEDED" : "DEAD", `verdict ${words(evidence.verdict)}`) : null,
    ),
    runLine(latestRun(step)),
    evidence.summary ? h("p", { class: "summary" }, evidence.summary) : null,
    (evidence.findings || []).length
      ? h("ul", { class: "findings", "aria-label": "Findings" }, evidence.findings.map((finding) => h("li", {}, finding)))
      : null,
    checks.length
      ? h(
          "ul",
          { class: "checks", "aria-label": "Checks" },
          checks.map((check) => h("li", {}, badge(check.status === "PASSED" ? "SUCCEEDED" : check.status === "FAILED" ? "DEAD" : "CANCELLED", words(check.status)), " ", check.name)),
        )
      : null,
    (evidence.links || []).length
      ? h("ul", { class: "links", "aria-label": "Links" }, evidence.links.map((url) => h("li", {}, link(url))))
      : null,
    (evidence.artifacts || []).length
      ? h(
          "ul",
          { class: "artifacts", "aria-label": "Artifacts" },
          evidence.artifacts.map((artifact) => h("li", {}, "artifact ", link(artifact.uri, artifact.name))),
        )
      : null,
    checkpointLines(step),
  );
}

/** An item's private bodies for its details: its inputs and its attempts' checkpoints, or
 * that they are hidden from the person's role. */
export function itemBodies(item) {
  const checkpoints = (item.attempts || []).filter((attempt) => attempt.checkpoint || attempt.checkpointRedacted);
  return h(
    "div",
    { class: "facts bodies" },
    h("h5", {}, "Inputs"),
    inputsBlock("Item inputs", item),
    checkpoints.length
      ? [
          h("h5", {}, "Checkpoints"),
          h(
            "ul",
            { class: "checkpoints" },
            checkpoints.map((attempt) =>
              attempt.checkpoint
                ? h(
                    "li",
                    {},
                    `attempt ${attempt.attempt}: ${attempt.checkpoint.summary || "(no summary)"}`,
                    attempt.checkpoint.nextAction ? ` — next: ${attempt.checkpoint.nextAction}` : "",
                    attempt.checkpoint.blockedReason ? ` — blocked: ${attempt.checkpoint.blockedReason}` : "",
                    (attempt.checkpoint.filesChanged || []).length ? h("div", { class: "small" }, `files: ${attempt.checkpoint.filesChanged.join(", ")}`) : null,
                  )
                : h("li", { class: "redacted" }, `attempt ${attempt.attempt}: checkpoint hidden — your role may not read it.`),
            ),
          ),
        ]
      : null,
  );
}

/** The facts as the dialog shows them. */
export function renderFacts({ lane, item, request }) {
  const steps = (lane.items || []).filter((other) => other.itemId !== item.itemId);
  const tickets = lane.tickets || [];
  return h(
    "div",
    { class: "facts", "aria-label": "The facts of the decision" },
    h(
      "p",
      { class: "requested" },
      request ? ["Requested by ", h("strong", {}, request.actor || "the coordinator"), " ", when(request.time)] : "No approval request recorded.",
    ),
    tickets.length
      ? h(
          "p",
          { class: "tickets" },
          "Tickets: ",
          tickets.map((ticket, index) => [index ? ", " : "", link(ticket.url, `${ticket.key}${ticket.state ? ` (${words(ticket.state)})` : ""}`)]),
        )
      : null,
    inputsBlock("Lane inputs", lane),
    inputsBlock("Item inputs", item),
    h("h3", {}, "Evidence"),
    steps.length
      ? h("ol", { class: "steps-evidence" }, steps.map(stepCard))
      : h("p", { class: "muted" }, "No other item in this lane."),
  );
}

/** A container for the dialog's body that fills itself with the facts (or says why not). */
export function factsPanel(coordinatorId, lane, item) {
  const panel = h("div", { class: "facts-panel", "aria-live": "polite" }, h("p", { class: "muted" }, "Loading the evidence…"));
  loadFacts(coordinatorId, lane.laneId, item.itemId).then(
    (facts) => panel.replaceChildren(renderFacts(facts.item ? facts : { ...facts, item })),
    (error) => panel.replaceChildren(h("p", { role: "alert" }, `The evidence could not be read: ${error.message}`)),
  );
  return panel;
}
