"""The invariant checker: the coordinator's safety invariants, checked from stored state and
the event log of one work coordinator. Only the tests and the benches run it, so it lives here
and ships in no service.

It reads only through the :class:`~workcoord.coordinator.domain.ports.Reader` port, so it runs
on any store (PostgreSQL, SQLite, the in-memory store): unit property tests, integration and
contention tests and chaos runs call it after the fact and expect an empty list.

The invariants, numbered as in the comments below:

1. at most one live attempt per item and per exclusive key (and the exclusive-holds table names
   exactly the live attempts holding each key);
2. live attempts per class never exceed the class capacity (statically, and by replaying every
   grant in the event log with :func:`replay_capacity`);
3. a write with a stale lease token never changes state (a property of each call, not of
   stored state: the fencing tests check it, not this module);
4. every item is terminal or held in a named state, its ``current_lease_id`` matches its live
   attempt, a WAITING item has an unmet dependency, and lane states agree with items;
5. revisions are gap-free from 1 and end at the coordinator's revision;
6. events never carry lease token hashes or the given private values;
7. no attempt of a spent budget was leased after the spend was committed: after a
   BUDGET_EXHAUSTED event no ITEM_LEASED of the work it covers (the lane's; for the day
   budget every lane's, that UTC day) until a human changes that budget (replayed from the
   event log by :func:`replay_budgets`).

Also checked: ``attempt_count`` equals the attempts that count against the retry budget.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC
from typing import Any

from workcoord.coordinator.domain.model import (
    TERMINAL_ITEM_STATES,
    Attempt,
    AttemptStatus,
    Event,
    EventType,
    Item,
    ItemState,
    Lane,
    LaneState,
)
from workcoord.coordinator.domain.ports import Reader

__all__ = [
    "CapacitySchedule",
    "check_invariants",
    "load_events",
    "replay_budgets",
    "replay_capacity",
]

_PAGE = 500

# (first revision it applies to, class -> capacity), ascending. Grants at revisions before the
# first entry are not checked (their capacity is unknown).
CapacitySchedule = Sequence[tuple[int, Mapping[str, int]]]

# Events that end the live attempt they name (by lease id).
_ENDS_LEASE = frozenset(
    {
        EventType.ITEM_SUCCEEDED,
        EventType.ITEM_FAILED,
        EventType.ITEM_CHECKPOINTED,
        EventType.ITEM_RELEASED,
        EventType.ATTEMPT_EXPIRED,
    }
)
_NAMED_STATES = frozenset(ItemState) - TERMINAL_ITEM_STATES


async def load_events(reader: Reader, coordinator_id: str) -> list[Event]:
    """Every event of ``coordinator_id``, in revision order."""
    events: list[Event] = []
    since = 0
    while True:
        page = await reader.list_events(coordinator_id, since, _PAGE, "", "")
        events.extend(page)
        if len(page) < _PAGE:
            return events
        since = page[-1].revision


async def _load_lanes(reader: Reader, coordinator_id: str) -> list[Lane]:
    lanes: list[Lane] = []
    after = None
    while True:
        page = await reader.list_lanes(coordinator_id, None, after, _PAGE)
        lanes.extend(page)
        if len(page) < _PAGE:
            return lanes
        after = (page[-1].create_time, page[-1].lane_id)


def _exclusive_keys(attempt: Attempt) -> list[str]:
    return [k for k in attempt.exclusive_key.split(",") if k]


async def check_invariants(
    reader: Reader,
    coordinator_id: str,
    private_values: Iterable[str] = (),
    capacity_history: CapacitySchedule | None = None,
) -> list[str]:
    """Violations of the stored invariants of ``coordinator_id`` (empty when all hold).

    ``private_values``: strings planted in inputs, checkpoints or tokens that must never appear
    in an event. ``capacity_history``: the class capacities over time, if the caller changed
    them and knows when; without it, grants are replayed against the current capacities from
    the last capacity change on.
    """
    out: list[str] = []
    coordinator = await reader.get_coordinator(coordinator_id)
    if coordinator is None:
        return [f"work coordinator {coordinator_id} not found"]
    events = await load_events(reader, coordinator_id)
    lanes = await _load_lanes(reader, coordinator_id)
    items = await reader.lane_items([lane.lane_id for lane in lanes]) if lanes else []
    attempts = await reader.item_attempts([i.item_id for i in items]) if items else []
    live = await reader.live_attempts(coordinator_id, None)
    capacities = coordinator.config.class_capacity

    # (5) revisions: gap-free from 1, strictly increasing, ending at the coordinator's revision.
    revisions = [e.revision for e in events]
    if revisions != list(range(1, len(revisions) + 1)):
        out.append(f"revisions are not gap-free from 1: {_summarise(revisions)}")
    if (revisions[-1] if revisions else 0) != coordinator.revision:
        out.append(
            f"the coordinator's revision {coordinator.revision} != last event revision "
            f"{revisions[-1] if revisions else 0}"
        )

    # (1) one live attempt per item and per exclusive key.
    live_by_item: dict[str, list[Attempt]] = {}
    for attempt in attempts:
        if attempt.live:
            live_by_item.setdefault(attempt.item_id, []).append(attempt)
    for item_id, held in live_by_item.items():
        if len(held) > 1:
            out.append(f"item {item_id} has {len(held)} live attempts: {_ids(held)}")
    live_ids = {a.lease_id for a in live}
    attempt_live_ids = {a.lease_id for a in attempts if a.live}
    if live_ids != attempt_live_ids:
        out.append(
            f"live_attempts() {sorted(live_ids)} disagrees with the items' live attempts "
            f"{sorted(attempt_live_ids)}"
        )
    by_key: dict[str, list[Attempt]] = {}
    for attempt in live:
        for key in _exclusive_keys(attempt):
            by_key.setdefault(key, []).append(attempt)
    for key, held in by_key.items():
        if len(held) > 1:
            out.append(f"exclusive key {key!r} has {len(held)} live holders: {_ids(held)}")
    every_key = sorted({k for a in attempts for k in _exclusive_keys(a)})
    holders = await reader.live_exclusive_holders(coordinator_id, every_key) if every_key else {}
    for key in every_key:
        expected = [a.lease_id for a in by_key.get(key, [])]
        actual = holders.get(key)
        if actual is None and expected:
            out.append(f"exclusive key {key!r} is held by {expected} but has no hold row")
        elif actual is not None and actual not in expected:
            out.append(f"exclusive key {key!r} has a hold row for {actual}, which is not live")

    # (2) capacity, statically: a class may exceed a lowered capacity only with attempts leased
    # before that change (they run out; nothing new is granted meanwhile).
    leased_at = {e.lease_id: e.revision for e in events if e.type == EventType.ITEM_LEASED}
    last_change = _last_capacity_change(events)
    per_class: dict[str, list[Attempt]] = {}
    for attempt in live:
        per_class.setdefault(attempt.worker_class, []).append(attempt)
    for cls, held in per_class.items():
        cap = capacities.get(cls, 0)
        if len(held) > cap and any(leased_at.get(a.lease_id, 0) > last_change for a in held):
            out.append(f"class {cls!r} has {len(held)} live attempts, capacity {cap}")
    schedule = capacity_history if capacity_history is not None else [(last_change, capacities)]
    out.extend(replay_capacity(events, schedule))
    # (7) budgets: nothing leased of a spent budget's work until it is changed.
    out.extend(replay_budgets(events))

    # (4) items: terminal or in a named state, consistent with their attempts.
    attempts_by_item: dict[str, list[Attempt]] = {}
    for attempt in attempts:
        attempts_by_item.setdefault(attempt.item_id, []).append(attempt)
    items_by_lane: dict[str, list[Item]] = {}
    for item in items:
        items_by_lane.setdefault(item.lane_id, []).append(item)
    redriven: dict[str, int] = {}
    for e in events:
        if e.type == EventType.ITEM_REDRIVEN:
            redriven[e.item_id] = e.revision
    for item in items:
        out.extend(_check_item(item, attempts_by_item.get(item.item_id, []), items_by_lane))
        # attempt_count: the attempts burning the budget since the last human redrive.
        since = redriven.get(item.item_id, 0)
        counted = [
            a
            for a in attempts_by_item.get(item.item_id, [])
            if a.counted and leased_at.get(a.lease_id, 0) > since
        ]
        if item.attempt_count != len(counted):
            out.append(
                f"item {item.item_id} attempt_count {item.attempt_count} != "
                f"{len(counted)} counted attempts"
            )
    for lane in lanes:
        out.extend(_check_lane(lane, items_by_lane.get(lane.lane_id, [])))

    # (6) nothing private in events: planted values and every lease token's hash.
    secrets = {v for v in private_values if v} | {a.token_hash for a in attempts if a.token_hash}
    for e in events:
        text = json.dumps(
            [e.lane_id, e.item_id, e.lease_id, e.actor, e.data], default=str, sort_keys=True
        )
        for value in secrets:
            if value in text:
                out.append(f"event {e.revision} ({e.type.value}) carries a private value")
    return out


def _check_item(
    item: Item, attempts: list[Attempt], items_by_lane: dict[str, list[Item]]
) -> list[str]:
    out: list[str] = []
    where = f"item {item.item_id} ({item.state.value})"
    if item.state not in TERMINAL_ITEM_STATES and item.state not in _NAMED_STATES:
        out.append(f"{where} is neither terminal nor in a named state")
    live = [a for a in attempts if a.live]
    if item.state in (ItemState.LEASED, ItemState.RUNNING):
        current = next((a for a in attempts if a.lease_id == item.current_lease_id), None)
        if current is None:
            out.append(f"{where} names no attempt of its own: {item.current_lease_id!r}")
        elif not current.live:
            out.append(f"{where} names the ended attempt {current.lease_id}")
        elif current.status.value != item.state.value:
            out.append(f"{where} but its attempt {current.lease_id} is {current.status.value}")
    else:
        if item.current_lease_id:
            out.append(f"{where} still names the lease {item.current_lease_id}")
        if live:
            out.append(f"{where} has live attempts {_ids(live)}")
    if item.state == ItemState.WAITING:
        by_key = {i.key: i for i in items_by_lane.get(item.lane_id, [])}
        if all(
            dep in by_key and by_key[dep].state == ItemState.SUCCEEDED for dep in item.depends_on
        ):
            out.append(f"{where} waits although every dependency succeeded")
    if item.state == ItemState.DEAD and item.dead_letter_reason is None:
        out.append(f"{where} has no dead-letter reason")
    if item.state == ItemState.STOPPED and not item.stop_reason:
        out.append(f"{where} has no stop reason")
    if item.state == ItemState.SUCCEEDED and not any(
        a.status == AttemptStatus.COMPLETED for a in attempts
    ):
        out.append(f"{where} has no completed attempt")
    return out


def _check_lane(lane: Lane, items: list[Item]) -> list[str]:
    out: list[str] = []
    finished = (ItemState.SUCCEEDED, ItemState.CANCELLED)
    if lane.state == LaneState.DONE and not (
        all(i.state in finished for i in items)
        and any(i.state == ItemState.SUCCEEDED for i in items)
    ):
        out.append(f"lane {lane.lane_id} is DONE with unfinished items")
    if lane.state == LaneState.CANCELLED and not all(
        i.state in TERMINAL_ITEM_STATES for i in items
    ):
        out.append(f"lane {lane.lane_id} is CANCELLED with open items")
    if (
        lane.state == LaneState.ACTIVE
        and items
        and all(i.state == ItemState.SUCCEEDED for i in items)
    ):
        out.append(f"lane {lane.lane_id} is ACTIVE although every item succeeded")
    return out


def replay_capacity(
    events: Sequence[Event], capacities: CapacitySchedule | Mapping[str, int]
) -> list[str]:
    """Replay grants (ITEM_LEASED) against the events ending them and report every grant that
    left a class above its capacity or an item with two live leases.

    ``capacities`` is one mapping (constant capacities) or a :data:`CapacitySchedule`. An
    attempt ends with ITEM_SUCCEEDED, ITEM_FAILED, ITEM_CHECKPOINTED, ITEM_RELEASED or
    ATTEMPT_EXPIRED naming its lease, or with ITEM_CANCELLED of its item.
    """
    schedule: list[tuple[int, Mapping[str, int]]] = (
        [(0, capacities)] if isinstance(capacities, Mapping) else sorted(capacities, key=_first)
    )
    out: list[str] = []
    item_class: dict[str, str] = {}
    live_lease: dict[str, tuple[str, str]] = {}  # lease_id -> (item_id, class)
    item_lease: dict[str, str] = {}  # item_id -> its live lease_id
    live_per_class: dict[str, int] = {}

    def end(lease_id: str) -> None:
        found = live_lease.pop(lease_id, None)
        if found is None:
            return
        item_id, cls = found
        live_per_class[cls] -= 1
        if item_lease.get(item_id) == lease_id:
            del item_lease[item_id]

    for e in events:
        if e.type == EventType.ITEM_CREATED:
            item_class[e.item_id] = str(e.data.get("workerClass", ""))
        elif e.type == EventType.ITEM_LEASED:
            cls = item_class.get(e.item_id, "")
            if e.item_id in item_lease:
                out.append(
                    f"revision {e.revision}: item {e.item_id} leased as {e.lease_id} while "
                    f"{item_lease[e.item_id]} is live"
                )
            item_lease[e.item_id] = e.lease_id
            live_lease[e.lease_id] = (e.item_id, cls)
            live_per_class[cls] = live_per_class.get(cls, 0) + 1
            cap = _capacity_at(schedule, e.revision, cls)
            if cap is not None and live_per_class[cls] > cap:
                out.append(
                    f"revision {e.revision}: class {cls!r} has {live_per_class[cls]} live "
                    f"leases, capacity {cap}"
                )
        elif e.type in _ENDS_LEASE:
            end(e.lease_id)
        elif e.type == EventType.ITEM_CANCELLED and e.item_id in item_lease:
            end(item_lease[e.item_id])
    return out


def replay_budgets(events: Sequence[Event]) -> list[str]:
    """Every ITEM_LEASED of work a spent budget covered when it was committed: a lane's after
    its BUDGET_EXHAUSTED (until a LANE_UPDATED changes its budget), any lane's after the day
    budget's BUDGET_EXHAUSTED on the same UTC day (until a COORDINATOR_UPDATED changes it).
    A change that leaves a budget spent emits no new exhaustion, so it is taken as a reopening:
    the replay never reports a lease it cannot prove wrong."""
    out: list[str] = []
    spent_lanes: dict[str, int] = {}  # lane -> revision of its BUDGET_EXHAUSTED
    spent_day: tuple[int, str] | None = None  # (revision, UTC day) of the day budget's
    for e in events:
        changed = e.data.get("fields", []) if isinstance(e.data, dict) else []
        if e.type == EventType.BUDGET_EXHAUSTED:
            if e.lane_id:
                spent_lanes[e.lane_id] = e.revision
            else:
                spent_day = (e.revision, _day(e))
        elif e.type == EventType.LANE_UPDATED and "budget" in changed:
            spent_lanes.pop(e.lane_id, None)
        elif e.type == EventType.COORDINATOR_UPDATED and "budget" in changed:
            spent_day = None
        elif e.type == EventType.ITEM_LEASED:
            if e.lane_id in spent_lanes:
                out.append(
                    f"lease {e.lease_id} at revision {e.revision} of lane {e.lane_id}, whose "
                    f"budget was spent at revision {spent_lanes[e.lane_id]}"
                )
            if spent_day is not None and _day(e) == spent_day[1]:
                out.append(
                    f"lease {e.lease_id} at revision {e.revision} after the day budget was "
                    f"spent at revision {spent_day[0]}"
                )
    return out


def _day(event: Event) -> str:
    return event.time.astimezone(UTC).date().isoformat()


def _first(entry: tuple[int, Mapping[str, int]]) -> int:
    return entry[0]


def _capacity_at(
    schedule: Sequence[tuple[int, Mapping[str, int]]], revision: int, cls: str
) -> int | None:
    found: Mapping[str, int] | None = None
    for start, caps in schedule:
        if start <= revision:
            found = caps
        else:
            break
    if found is None:
        return None
    return found.get(cls, 0)


def _last_capacity_change(events: Sequence[Event]) -> int:
    last = 0
    for e in events:
        fields: Any = e.data.get("fields", [])
        if e.type == EventType.COORDINATOR_UPDATED and (
            not isinstance(fields, list) or "class_capacity" in fields
        ):
            last = e.revision
    return last


def _ids(attempts: Iterable[Attempt]) -> str:
    return ", ".join(a.lease_id for a in attempts)


def _summarise(revisions: list[int]) -> str:
    if len(revisions) <= 12:
        return str(revisions)
    return f"{revisions[:6]} … {revisions[-6:]} ({len(revisions)} events)"
