// The work coordinator's tracker connections (org admins only: the API refuses anyone else):
// each one's tracker, projects, credential fingerprint and health — when a call through it
// last went through, and its last error. The credential itself is never sent to the page.

import { badge, h, section, when } from "./dom.js";

/** One connection's health: healthy, failing (with the error) or not used yet. */
export function connectionHealth(connection) {
  const failing = connection.lastErrorTime && (!connection.lastSuccessTime || connection.lastErrorTime > connection.lastSuccessTime);
  if (failing) {
    return h(
      "p",
      { class: "small" },
      badge("bad", "failing"),
      " since ",
      when(connection.lastErrorTime),
      ` — ${connection.lastError}`,
      connection.lastSuccessTime ? h("span", { class: "muted" }, " · last worked ", when(connection.lastSuccessTime)) : null,
    );
  }
  if (connection.lastSuccessTime) {
    return h("p", { class: "small" }, badge("SUCCEEDED", "healthy"), " last worked ", when(connection.lastSuccessTime));
  }
  return h("p", { class: "small muted" }, "Not used yet.");
}

/** The side card listing ``ctx.trackers`` (null: not read, or not the reader's to see). */
export function renderTrackers(ctx) {
  if (!ctx.trackers && !ctx.trackersError) return null;
  let body;
  if (ctx.trackersError) body = h("p", { role: "alert" }, ctx.trackersError);
  else if (!ctx.trackers.length) body = h("p", { class: "empty" }, "No tracker connection: tickets use the installation's GitHub token.");
  else {
    body = h(
      "ul",
      { class: "list" },
      ctx.trackers.map((connection) =>
        h(
          "li",
          { dataset: { key: `tracker-${connection.trackerId}` } },
          h(
            "div",
            { class: "row" },
            h("strong", {}, connection.tracker),
            h("span", { class: "mono small" }, connection.credentialFingerprint),
            h("span", { class: "muted small" }, connection.trackerId),
          ),
          h("p", { class: "small" }, (connection.projects || []).join(", ")),
          connectionHealth(connection),
        ),
      ),
    );
  }
  return section(["Trackers"], { id: `trackers-${ctx.cid}` }, body);
}
