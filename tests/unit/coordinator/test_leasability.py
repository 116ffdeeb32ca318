"""Which gates hold an item (domain/leasability.py), and the claim, why and the labels agreeing
on it."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workcoord.coordinator.domain import rules
from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.domain.inputs import (
    CreateLaneInput,
    ExplainInput,
    FailInput,
    GetItemInput,
    GetViewInput,
    LeaseInput,
)
from workcoord.coordinator.domain.leasability import (
    STORE_GATES,
    Asker,
    Gate,
    LaneHold,
    Surroundings,
    holding_gates,
    leasable,
    ready_in_store,
)
from workcoord.coordinator.domain.model import Item, ItemKind, ItemState, Worker
from workcoord.coordinator.domain.specs import Failure, LeaseAsk
from workcoord.kit.clock import ManualClock

from .harness import World, lane_spec, run_identity, task

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)
OPEN = LaneHold()
ROOM = Surroundings(NOW, {"codex": (0, 2)})


def _item(**changes: object) -> Item:
    base = Item(
        item_id="it_1",
        coordinator_id="wc_1",
        lane_id="ln_1",
        key="a",
        kind=ItemKind.TASK,
        worker_class="codex",
        state=ItemState.QUEUED,
        create_time=NOW,
        update_time=NOW,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def _worker(worker_id: str = "w1", **changes: object) -> Worker:
    base = Worker("wc_1", worker_id, "codex", create_time=NOW, observe_time=NOW)
    return replace(base, **changes)  # type: ignore[arg-type]


ASKING = [Asker.of(_worker())]


@pytest.mark.parametrize(
    ("item", "lane", "around", "gates"),
    [
        (_item(), OPEN, ROOM, ()),
        (_item(), OPEN, replace(ROOM, coordination_on=False), (Gate.DISABLED,)),
        (_item(), LaneHold(paused=True), ROOM, (Gate.PAUSED,)),
        (_item(), LaneHold(blocked=True), ROOM, (Gate.BLOCKED,)),
        (_item(state=ItemState.WAITING), OPEN, ROOM, (Gate.DEPENDENCIES,)),
        (_item(state=ItemState.AWAITING_APPROVAL), OPEN, ROOM, (Gate.APPROVAL,)),
        (_item(state=ItemState.STOPPED), LaneHold(paused=True), ROOM, (Gate.PAUSED, Gate.STOPPED)),
        (_item(not_before=NOW + timedelta(microseconds=1)), OPEN, ROOM, (Gate.BACKOFF,)),
        (_item(not_before=NOW), OPEN, ROOM, ()),  # a backoff ending now is over
        (_item(), OPEN, replace(ROOM, capacity={"codex": (2, 2)}), (Gate.CAPACITY,)),
        (_item(worker_class="gpu"), OPEN, ROOM, (Gate.CAPACITY,)),  # an unknown class: 0/0
        (
            _item(exclusive_key="repo:a"),
            OPEN,
            replace(ROOM, key_holders={"repo:a": "ls_1"}),
            (Gate.EXCLUSIVE,),
        ),
        (
            _item(placement={"exclusive": ["gpu0"]}),
            OPEN,
            replace(ROOM, key_holders={"resource:gpu0": "ls_1"}, fenced_leases=frozenset({"ls_1"})),
            (Gate.FENCED,),
        ),
        (_item(), OPEN, replace(ROOM, budget_spent=True), (Gate.BUDGET,)),
        (_item(), OPEN, replace(ROOM, budget_spent=None), ()),  # no budget known: open
        (
            _item(not_before=NOW + timedelta(seconds=1), exclusive_key="k"),
            LaneHold(paused=True, blocked=True),
            replace(ROOM, capacity={"codex": (2, 2)}, key_holders={"k": "ls_1"}),
            (Gate.PAUSED, Gate.BLOCKED, Gate.BACKOFF, Gate.CAPACITY, Gate.EXCLUSIVE),
        ),
        # Leased, running or finished: past leasing.
        (_item(state=ItemState.RUNNING), LaneHold(paused=True), ROOM, ()),
        (_item(state=ItemState.SUCCEEDED), OPEN, ROOM, ()),
    ],
)
def test_each_gate_of_the_table(
    item: Item, lane: LaneHold, around: Surroundings, gates: tuple[Gate, ...]
) -> None:
    assert holding_gates(item, lane, around, ASKING) == gates
    assert leasable(item, lane, around, ASKING) == (item.state == ItemState.QUEUED and not gates)


def test_the_worker_gates_are_read_only_for_an_item_otherwise_ready() -> None:
    placed = _item(placement={"worker_id": "w-special"})
    assert holding_gates(placed, OPEN, ROOM, []) == (Gate.PLACEMENT,)
    assert holding_gates(placed, OPEN, ROOM, ASKING) == (Gate.PLACEMENT,)
    assert holding_gates(placed, OPEN, ROOM, [Asker.of(_worker("w-special"))]) == ()
    labelled = _item(placement={"require_labels": {"gpu": "a100"}})
    assert holding_gates(labelled, OPEN, ROOM, ASKING) == (Gate.PLACEMENT,)
    able = Asker.of(_worker(labels={"gpu": "a100"}))
    assert holding_gates(labelled, OPEN, ROOM, [able]) == ()
    assert holding_gates(labelled, OPEN, ROOM, [replace(able, fenced=True)]) == (Gate.FENCED,)
    malformed = _item(placement={"worker_id": 7})
    assert holding_gates(malformed, OPEN, ROOM, ASKING) == (Gate.PLACEMENT,)
    assert holding_gates(_item(), OPEN, ROOM, []) == (Gate.NOBODY_ASKING,)
    # Not read while another gate holds the item, nor without askers (labels).
    full = replace(ROOM, capacity={"codex": (2, 2)})
    assert holding_gates(placed, OPEN, full, []) == (Gate.CAPACITY,)
    assert holding_gates(placed, OPEN, ROOM) == ()


_AROUND = st.builds(
    Surroundings,
    now=st.just(NOW),
    capacity=st.fixed_dictionaries({"codex": st.tuples(st.integers(0, 3), st.integers(0, 3))}),
    key_holders=st.dictionaries(st.sampled_from(["repo:a", "resource:gpu0"]), st.just("ls_1")),
    budget_spent=st.none() | st.booleans(),
)
_ITEMS = st.builds(
    _item,
    state=st.sampled_from(ItemState),
    held=st.booleans(),
    not_before=st.none() | st.sampled_from([-1, 0, 1]).map(lambda s: NOW + timedelta(seconds=s)),
    exclusive_key=st.sampled_from(["", "repo:a", "repo:b"]),
    placement=st.sampled_from([None, {"exclusive": ["gpu0"]}]),
)


@settings(max_examples=300, derandomize=True)
@given(item=_ITEMS, around=_AROUND)
def test_a_queued_items_label_says_lease_exactly_when_nothing_holds_it(
    item: Item, around: Surroundings
) -> None:
    label = rules.item_next_action(item, around)
    if item.state == ItemState.QUEUED:
        claimable = leasable(item, LaneHold.mirrored(item), around, ASKING)
        assert label.startswith("lease ") == claimable, label
    gates = holding_gates(item, LaneHold.mirrored(item), around)
    assert ready_in_store(item, NOW) == (
        item.state == ItemState.QUEUED and not STORE_GATES.intersection(gates)
    )


# ------------------------------------------------------------------ through the engine


async def _labels(engine: Engine, world: World, lane_id: str) -> dict[str, str]:
    """Each item's label as GetLane, GetView and why give it (they must agree)."""
    detail = await engine.lanes.get_lane(world.worker, world.cid, lane_id)
    labels = {i.key: rules.item_next_action(i, detail.surroundings) for i in detail.items}
    view = await engine.reads.view(
        world.worker, GetViewInput(coordinator_id=world.cid, page_size=100)
    )
    (shown,) = [d for d in view.lanes if d.lane.lane_id == lane_id]
    assert {i.key: rules.item_next_action(i, shown.surroundings) for i in shown.items} == labels
    for item in detail.items:
        why = await engine.reads.explain(
            world.worker, ExplainInput(coordinator_id=world.cid, item_id=item.item_id)
        )
        assert why.next_action == labels[item.key]
        single = await engine.lanes.get_item(
            world.worker,
            GetItemInput(coordinator_id=world.cid, lane_id=lane_id, item_id=item.item_id),
        )
        assert rules.item_next_action(single.item, single.surroundings) == labels[item.key]
    return labels


async def test_labels_show_a_backoff_and_a_held_key_as_leasing_sees_them(
    engine: Engine, world: World, clock: ManualClock
) -> None:
    """Regression: both read ``lease task (codex)`` while no worker could lease them."""
    spec = lane_spec(
        task("retry", priority=9),
        task("holder", exclusive_key="repo:x", priority=5),
        task("same-repo", exclusive_key="repo:x"),
    )
    detail = await engine.lanes.create_lane(
        world.worker, CreateLaneInput(coordinator_id=world.cid, spec=spec)
    )
    lane_id = detail.lane.lane_id

    async def lease(n: int = 1) -> list[str]:
        ask = LeaseAsk("w1", "codex", n, 60, 0, run_identity(clock))
        return [
            g.item.key
            for g in await engine.leasing.lease(
                world.worker, LeaseInput(coordinator_id=world.cid, ask=ask)
            )
        ]

    async def fail_first() -> None:
        ask = LeaseAsk("w1", "codex", 1, 60, 0, run_identity(clock))
        (granted,) = await engine.leasing.lease(
            world.worker, LeaseInput(coordinator_id=world.cid, ask=ask)
        )
        assert granted.item.key == "retry"
        failure = Failure(message="flaky", retryable=True)
        await engine.attempts.fail(
            world.worker,
            FailInput(
                coordinator_id=world.cid,
                lease_id=granted.attempt.lease_id,
                lease_token=granted.lease_token,
                error=failure,
            ),
        )

    await fail_first()
    assert await lease() == ["holder"]
    labels = await _labels(engine, world, lane_id)
    assert labels["retry"] == "wait: backoff"
    assert labels["same-repo"] == "wait: repo:x held"
    why = await engine.reads.explain(
        world.worker, ExplainInput(coordinator_id=world.cid, item_id=detail.items[2].item_id)
    )
    assert [g.gate for g in why.gates] == ["EXCLUSIVE"]
    assert await lease(2) == []  # what the labels said
    clock.advance(timedelta(minutes=10))  # the backoff is over (the holder's lease too)
    labels = await _labels(engine, world, lane_id)
    assert labels["retry"] == "lease task (codex)"
    assert await lease() == ["retry"]
