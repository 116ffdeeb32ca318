// Reading a work coordinator's view for the page: every lane (page after page of
// GET …/view, newest first, up to MAX_LANES), then, as the feed tells of changes, only what
// changed when that is enough.
//
// What changed: the view's head (its first HEAD_LANES lanes, with capacity, workers, pending
// actions and escalations) and each lane the deltas named (GET …/lanes/{id}). Every other lane
// is kept as it was read, which is right only while the capacity in use is unchanged: next
// action labels such as "wait: codex 4/4" are derived from it. So a change of capacity, a
// lane the page does not know yet (created beyond the head), or a burst touching more than
// MAX_TOUCHED lanes reads the whole view again.

import { api, coordinatorPath } from "./api.js";

const VIEW_PAGE = 500;
export const MAX_LANES = 5000;
const HEAD_LANES = 50;
const MAX_TOUCHED = 25;

function viewPage(cid, pageSize, pageToken) {
  return api(coordinatorPath(cid, "view"), { params: { pageSize, pageToken } });
}

/** Every lane of the view (at most MAX_LANES; ``nextPageToken`` says there are more). The
 * revision is the first page's: anything later comes again in the feed. */
export async function readWholeView(cid) {
  const first = await viewPage(cid, VIEW_PAGE, "");
  const byId = new Map((first.lanes || []).map((lane) => [lane.laneId, lane]));
  let token = first.nextPageToken || "";
  let laneUsage = first.laneUsage || [];
  while (token && byId.size < MAX_LANES) {
    const page = await viewPage(cid, VIEW_PAGE, token);
    for (const lane of page.lanes || []) if (!byId.has(lane.laneId)) byId.set(lane.laneId, lane);
    laneUsage = mergeLaneUsage(laneUsage, page.laneUsage);
    token = page.nextPageToken || "";
  }
  return { ...first, lanes: [...byId.values()], laneUsage, nextPageToken: token };
}

/** Each page's ``laneUsage`` covers only its own lanes: keep every lane's, the larger figure
 * when two reads name one (spend only grows). */
export function mergeLaneUsage(older, newer) {
  const byLane = new Map((older || []).map((total) => [total.key, total]));
  for (const total of newer || []) {
    const kept = byLane.get(total.key);
    if (!kept || Number(total.costMicros || 0) >= Number(kept.costMicros || 0)) byLane.set(total.key, total);
  }
  return [...byLane.values()];
}

function capacityKey(view) {
  return JSON.stringify((view.capacity || []).map((c) => [c.workerClass, c.inUse || 0, c.capacity || 0]));
}

/**
 * ``current`` brought up to date after deltas that named the lanes ``touched`` (a Set, or null
 * when some change named no lane it can be pinned to).
 */
export async function readChanges(cid, current, touched) {
  if (!current || touched === null || touched.size > MAX_TOUCHED) return readWholeView(cid);
  const head = await viewPage(cid, HEAD_LANES, "");
  const headLanes = head.lanes || [];
  const inHead = new Set(headLanes.map((lane) => lane.laneId));
  const known = new Map((current.lanes || []).map((lane) => [lane.laneId, lane]));
  const elsewhere = [...touched].filter((laneId) => !inHead.has(laneId));
  const fresh = headLanes.filter((lane) => !known.has(lane.laneId)).length;
  const reachesOld = headLanes.length < HEAD_LANES || headLanes.some((lane) => known.has(lane.laneId));
  if (
    capacityKey(head) !== capacityKey(current) ||
    elsewhere.some((laneId) => !known.has(laneId)) ||
    !reachesOld ||
    fresh + known.size > MAX_LANES
  ) {
    return readWholeView(cid);
  }
  const read = await Promise.all(elsewhere.map((laneId) => api(coordinatorPath(cid, "lanes", laneId))));
  for (const lane of read) known.set(lane.laneId, lane);
  for (const lane of headLanes) known.delete(lane.laneId);
  return {
    ...head,
    lanes: [...headLanes, ...known.values()],
    laneUsage: mergeLaneUsage(current.laneUsage, head.laneUsage),
    nextPageToken: current.nextPageToken,
  };
}
