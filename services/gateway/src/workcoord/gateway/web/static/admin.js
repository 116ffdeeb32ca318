// /admin/work-coordinator: for verified platform admins. The platform switch, recovery (leader,
// last passes), every work coordinator across orgs with its health, GLOBAL and the grants
// children gave it; any coordinator opens below, live.
//
// The overview is live over the feed, not polled: it follows each coordinator's WebSocket
// (…/ws?since=<its revision>), and when one moves (a delta, or a ping with a newer revision)
// it reads that coordinator's health again, with the recovery status; a feed refused (the
// switch went off, say) reads the settings too. Reads are coalesced per coordinator.

import { api, coordinatorPath, listAll } from "./api.js";
import { mountCoordinator } from "./coordinator.js";
import { confirmAction } from "./dialog.js";
import { badge, count, fill, h, section, toast, when, words } from "./dom.js";
import { follow } from "./feed.js";
import { filtersHash, initialFilters } from "./lanes.js";
import { mainElement, message, topbar, whoAmI } from "./layout.js";

// Chromium allows 255 WebSockets in all; past this many coordinators the rest are shown as
// read when the page opened (and the live badge says so).
const MAX_FEEDS = 100;
const HEALTH_READS_AT_ONCE = 4;
// Lanes read per coordinator for its health: active lanes come first in a view.
const HEALTH_LANES = 100;
const HUMAN_STATES = new Set(["AWAITING_APPROVAL", "STOPPED", "DEAD"]);

const state = {
  settings: null,
  recovery: null,
  recoveryError: "",
  coordinators: [],
  health: new Map(),
  grants: new Map(),
  error: "",
  feeds: new Map(),
  feedStates: new Map(),
};

async function inBatches(values, size, work) {
  for (let start = 0; start < values.length; start += size) {
    await Promise.all(values.slice(start, start + size).map(work));
  }
}

async function load() {
  const [settings, recovery, coordinators] = await Promise.allSettled([
    api("/v1/settings"),
    api("/v1/recovery/status"),
    listAll("/v1/work-coordinators", "workCoordinators"),
  ]);
  state.settings = settings.status === "fulfilled" ? settings.value : null;
  state.recovery = recovery.status === "fulfilled" ? recovery.value : null;
  state.recoveryError = recovery.status === "rejected" ? recovery.reason.message : "";
  state.error = coordinators.status === "rejected" ? coordinators.reason.message : "";
  state.coordinators = coordinators.status === "fulfilled" ? coordinators.value : [];
  const global = state.coordinators.find((c) => c.scope === "GLOBAL");
  const children = global ? state.coordinators.filter((c) => c.parentCoordinatorId === global.coordinatorId) : [];
  await inBatches(state.coordinators, HEALTH_READS_AT_ONCE, readHealth);
  await inBatches(children, HEALTH_READS_AT_ONCE, async (child) => {
    try {
      const answer = await api(coordinatorPath(child.coordinatorId, "grants"), { params: { pageSize: 500 } });
      state.grants.set(child.coordinatorId, answer.grants || []);
    } catch (error) {
      state.grants.set(child.coordinatorId, { error: error.message });
    }
  });
}

async function readHealth(coordinator) {
  try {
    const view = await api(coordinatorPath(coordinator.coordinatorId, "view"), {
      params: { pageSize: HEALTH_LANES },
    });
    state.health.set(coordinator.coordinatorId, { view });
    // The view carries the coordinator as it is now (revision, switch).
    if (view.workCoordinator) Object.assign(coordinator, view.workCoordinator);
  } catch (error) {
    state.health.set(coordinator.coordinatorId, { error: error.message });
  }
}

async function readRecovery() {
  try {
    state.recovery = await api("/v1/recovery/status");
    state.recoveryError = "";
  } catch (error) {
    state.recoveryError = error.message;
  }
}

async function readSettings() {
  try {
    state.settings = await api("/v1/settings");
  } catch {
    // Kept as it was: the next change will tell.
  }
}

// --- live: one feed per coordinator --------------------------------------------------------

const pendingReads = new Map();

/** Read ``coordinator`` again (and recovery, and the settings when ``withSettings``), then
 * render; one read at a time per coordinator, a request meanwhile makes one more. */
function reread(coordinator, withSettings = false) {
  const id = coordinator.coordinatorId;
  const pending = pendingReads.get(id);
  if (pending) {
    pending.again = true;
    pending.withSettings ||= withSettings;
    return;
  }
  const entry = { again: false, withSettings };
  pendingReads.set(id, entry);
  (async () => {
    do {
      entry.again = false;
      const settings = entry.withSettings;
      entry.withSettings = false;
      await Promise.all([readHealth(coordinator), readRecovery(), settings ? readSettings() : null]);
      renderOverview();
    } while (entry.again);
  })().finally(() => pendingReads.delete(id));
}

function followAll() {
  for (const { coordinatorId: id } of state.coordinators.slice(0, MAX_FEEDS)) {
    if (state.feeds.has(id)) continue;
    // The list is read again after the switch changes: always the current record.
    const current = () => state.coordinators.find((c) => c.coordinatorId === id);
    const revision = () => Number(current()?.revision || 0);
    const feed = follow(id, {
      since: revision,
      onFrame: (frame) => {
        const coordinator = current();
        const at = Number(frame.toRevision ?? frame.revision ?? 0);
        if (!coordinator || (frame.type === "ping" && at <= revision())) return;
        if (frame.type === "delta" || frame.type === "snapshot" || frame.type === "ping") {
          coordinator.revision = String(Math.max(at, revision()));
          reread(coordinator);
        }
      },
      onStatus: (status) => {
        state.feedStates.set(id, status);
        updateLivePill();
        const coordinator = current();
        if (status === "refused" && coordinator) reread(coordinator, true);
      },
    });
    state.feeds.set(id, feed);
  }
}

/** "Live" when every followed feed is, else how many are. */
function livePill() {
  const pill = h("span", { class: "live", id: "overview-live", role: "status", "aria-live": "polite" });
  fillLivePill(pill);
  return pill;
}

function fillLivePill(pill) {
  const followed = Math.min(state.coordinators.length, MAX_FEEDS);
  const live = [...state.feedStates.values()].filter((status) => status === "live").length;
  const all = followed > 0 && live === followed;
  pill.dataset.state = all ? "live" : live ? "reconnecting" : "connecting";
  const unfollowed = state.coordinators.length - followed;
  pill.textContent = all ? "Live" : `Live ${live} of ${followed}`;
  if (unfollowed > 0) pill.textContent += ` (${unfollowed} not followed: reload to update them)`;
}

function updateLivePill() {
  const pill = document.getElementById("overview-live");
  if (pill) fillLivePill(pill);
}

function lastPass(coordinatorId) {
  return (state.recovery?.coordinators || []).find((pass) => pass.coordinatorId === coordinatorId);
}

/** A word and a tone for a coordinator's health. */
function health(coordinator) {
  const found = state.health.get(coordinator.coordinatorId) || {};
  const pass = lastPass(coordinator.coordinatorId);
  if (state.settings?.workCoordinatorEnabled === false) return ["bad", "platform switched off"];
  if (coordinator.enabled === false) return ["bad", "switched off"];
  if (found.error) return ["bad", found.error];
  if (pass?.error) return ["bad", `recovery failing: ${pass.error}`];
  const view = found.view || {};
  const escalations = (view.escalations || []).filter((e) => e.open).length;
  const pending = (view.pendingActions || []).filter((a) => a.state === "OPEN").length;
  let waiting = 0;
  for (const lane of view.lanes || []) {
    if (lane.state !== "ACTIVE") continue;
    waiting += (lane.items || []).filter((item) => HUMAN_STATES.has(item.state)).length;
  }
  if (escalations || pending || waiting) {
    const parts = [];
    if (waiting) parts.push(`${waiting}${view.nextPageToken ? "+" : ""} wait on a human`);
    if (escalations) parts.push(`${escalations} escalated`);
    if (pending) parts.push(`${pending} pending`);
    return ["warn", parts.join(", ")];
  }
  return ["ok", "healthy"];
}

function switchTile() {
  const enabled = state.settings?.workCoordinatorEnabled !== false;
  const button = h(
    "button",
    {
      type: "button",
      class: enabled ? "danger" : "primary",
      dataset: { decision: "platform-switch", key: "platform-switch" },
      onclick: async () => {
        const done = await confirmAction({
          title: enabled ? "Switch coordination off everywhere?" : "Switch coordination back on?",
          body: h(
            "p",
            {},
            enabled
              ? "Every work call, MCP and the feeds answer COORDINATION_DISABLED and recovery passes stop, on every work coordinator. Nothing is lost; administration stays available."
              : "Work calls, feeds and recovery passes resume on every enabled work coordinator.",
          ),
          confirmLabel: enabled ? "Switch off" : "Switch on",
          tone: enabled ? "danger" : "primary",
          field: null,
          perform: () => api("/v1/settings", { method: "PATCH", body: { workCoordinatorEnabled: !enabled } }),
        });
        if (done) {
          toast(enabled ? "Coordination switched off" : "Coordination switched on");
          refreshOverview();
        }
      },
    },
    enabled ? "Switch off" : "Switch on",
  );
  return section(
    "Platform switch",
    { id: "switch" },
    h("p", { class: "switch-state" }, enabled ? "Coordination is on" : "Coordination is OFF"),
    state.settings?.updateTime ? h("p", { class: "hint" }, "changed ", when(state.settings.updateTime)) : null,
    h("div", { class: "actions" }, button),
  );
}

function recoveryTile() {
  const status = state.recovery;
  if (!status) {
    return section("Recovery", { id: "recovery" }, h("p", { role: "alert" }, state.recoveryError || "Unknown."));
  }
  return section(
    ["Recovery ", badge(status.leaderId ? "ok" : "bad", status.leaderId ? "led" : "no leader")],
    { id: "recovery" },
    h(
      "ul",
      { class: "list small" },
      h("li", {}, h("strong", {}, "Leader: "), status.leaderId || "none", status.leader ? " (this replica)" : ""),
      h("li", {}, h("strong", {}, "Leadership lease ends: "), when(status.leadershipExpireTime) || "—"),
      h("li", {}, h("strong", {}, "Last full pass: "), when(status.lastPassTime) || "none yet", ` · every ${status.interval || "?"}`),
      h("li", {}, h("strong", {}, "Passes since start: "), String(status.passesTotal || 0)),
      status.lastError ? h("li", { role: "alert" }, h("strong", {}, "Last error: "), status.lastError) : null,
    ),
  );
}

function coordinatorCard(coordinator, open) {
  const [tone, text] = health(coordinator);
  const view = state.health.get(coordinator.coordinatorId)?.view;
  const inUse = (view?.capacity || []).reduce((sum, usage) => sum + (usage.inUse || 0), 0);
  const capacity = (view?.capacity || []).reduce((sum, usage) => sum + (usage.capacity || 0), 0);
  const pass = lastPass(coordinator.coordinatorId);
  return h(
    "li",
    { class: "card tile", dataset: { coordinator: coordinator.coordinatorId } },
    h(
      "h3",
      {},
      coordinator.displayName || coordinator.coordinatorId,
      badge(coordinator.scope === "GLOBAL" ? "warn" : "neutral", coordinator.scope === "GLOBAL" ? "global" : coordinator.orgSlug),
    ),
    h("p", {}, badge(tone, text)),
    h(
      "div",
      { class: "meta" },
      h("span", {}, `revision ${coordinator.revision || 0}`),
      view ? h("span", {}, `${inUse} / ${capacity} slots in use`) : null,
      h("span", {}, "last pass ", pass ? when(pass.passTime) : "none yet"),
    ),
    h(
      "div",
      { class: "actions" },
      h(
        "button",
        { type: "button", class: "primary", dataset: { key: `open-${coordinator.coordinatorId}` }, onclick: () => open(coordinator) },
        "Open here",
      ),
      coordinator.scope === "ORG"
        ? h(
            "a",
            {
              class: "button",
              "data-key": `org-${coordinator.coordinatorId}`,
              href: `/o/${encodeURIComponent(coordinator.orgSlug)}/work-coordinator#c=${encodeURIComponent(coordinator.coordinatorId)}`,
            },
            "Org page",
          )
        : null,
    ),
  );
}

function grantsTile() {
  const global = state.coordinators.find((c) => c.scope === "GLOBAL");
  if (!global) {
    return section(
      "GLOBAL and its grants",
      { id: "global" },
      h("p", { class: "empty" }, "No GLOBAL work coordinator yet (workcoord coordinators create --scope GLOBAL)."),
    );
  }
  const children = state.coordinators.filter((c) => c.parentCoordinatorId === global.coordinatorId);
  const rows = [];
  for (const child of children) {
    const grants = state.grants.get(child.coordinatorId);
    if (grants?.error) {
      rows.push(h("li", {}, h("strong", {}, child.displayName || child.coordinatorId), ": ", grants.error));
      continue;
    }
    const list = (grants || []).filter((grant) => grant.parentCoordinatorId === global.coordinatorId);
    rows.push(
      h(
        "li",
        {},
        h("div", { class: "row" }, h("strong", {}, child.displayName || child.coordinatorId), badge("neutral", child.orgSlug)),
        list.length
          ? h(
              "ul",
              { class: "holders" },
              list.map((grant) =>
                h(
                  "li",
                  {},
                  badge(grant.live ? "ok" : "bad", grant.live ? "live" : grant.revokeTime ? "revoked" : "expired"),
                  " ",
                  (grant.permissions || []).map(words).join(", "),
                  " · expires ",
                  when(grant.expireTime),
                ),
              ),
            )
          : h("p", { class: "muted small" }, "No grant: GLOBAL can see nothing of it."),
      ),
    );
  }
  return section(
    ["GLOBAL and its grants", count(children.length)],
    { id: "global" },
    h("p", {}, global.displayName || global.coordinatorId, " · ", badge(...health(global))),
    rows.length ? h("ul", { class: "list" }, rows) : h("p", { class: "empty" }, "No org work coordinator names GLOBAL as its parent."),
  );
}

let mounted = null;
const overview = h("div", { class: "stack" });
const panel = h("section", { id: "panel", "aria-label": "Selected work coordinator" });

function open(coordinator, scroll = true, hash = "") {
  mounted?.close();
  const address = `#c=${encodeURIComponent(coordinator.coordinatorId)}${filtersHash(initialFilters(hash))}`;
  history.replaceState(null, "", address);
  mounted = mountCoordinator(panel, { coordinator, canDecide: true, hash });
  if (scroll) panel.scrollIntoView({ behavior: "smooth", block: "start" });
}

let deferred = false;

function renderOverview() {
  // Not under an open confirmation: it renders once the dialog has closed.
  if (document.querySelector("dialog[open]")) {
    deferred = true;
    return;
  }
  deferred = false;
  // A live update must not take the keyboard focus away from the control that has it.
  const focusKey = overview.contains(document.activeElement) ? document.activeElement.dataset.key : null;
  const list = state.coordinators;
  fill(
    overview,
    state.error ? h("div", { class: "banner error", role: "alert" }, state.error) : null,
    h("div", { class: "tiles" }, switchTile(), recoveryTile(), grantsTile()),
    h(
      "section",
      { "aria-labelledby": "all-title", class: "stack" },
      h(
        "div",
        { class: "section-head" },
        h("h2", { id: "all-title" }, "Every work coordinator", count(list.length)),
        livePill(),
      ),
      list.length
        ? h("ul", { class: "tiles" }, list.map((coordinator) => coordinatorCard(coordinator, open)))
        : h("p", { class: "empty" }, "No work coordinator yet."),
    ),
  );
  if (focusKey) overview.querySelector(`[data-key="${CSS.escape(focusKey)}"]`)?.focus();
}

async function refreshOverview() {
  await load();
  renderOverview();
  followAll();
}

async function main() {
  const me = await whoAmI();
  topbar(me, "Platform admin");
  if (!me.platformAdmin) {
    message("For platform admins", "This page is for verified platform admins.", { href: "/", text: "Go to your page" });
    return;
  }
  mainElement().append(h("h1", { class: "visually-hidden" }, "Platform admin"), overview, panel);
  await refreshOverview();
  const wanted = /(?:^#|&)c=([^&]+)/.exec(location.hash);
  const first = wanted && state.coordinators.find((c) => c.coordinatorId === decodeURIComponent(wanted[1]));
  if (first) open(first, false, location.hash);
  document.addEventListener("close", () => deferred && renderOverview(), true);
}

main().catch((error) => message("Something went wrong", error.message));
