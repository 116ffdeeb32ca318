"""Which gates hold an item or a lane, with details and since when (pure: no I/O).

Which gates are closed is :mod:`..leasability`'s decision; this module only describes them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from .. import rules
from ..budgets import SpentBudget
from ..leasability import (
    ESCALATING_GATES,
    Asker,
    Gate,
    LaneHold,
    Surroundings,
    held_keys,
    holding_gates,
    lane_holding_gates,
)
from ..model import Blocker, Coordinator, Item, ItemState, Lane, Worker
from ..results import GateInfo
from ..stops import disallowed_action_classes


@dataclass(frozen=True, slots=True)
class Occupancy:
    """What holds a work coordinator's capacity and exclusive keys, and who asks for work."""

    usage: rules.CapacityUsage
    holders: dict[str, str]  # exclusive key -> lease id holding it
    workers: list[Worker]
    # Live leases of fenced workers: lease id -> worker id (their keys stay held meanwhile).
    fenced_leases: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class GateContext:
    """Everything the gates of one lane's items are read from."""

    coordinator: Coordinator
    platform_on: bool
    lane: Lane
    blockers: list[Blocker]
    items: list[Item]
    occupancy: Occupancy
    now: datetime
    # The spent budget that covers the lane's work (None: none is spent, or not read).
    budget: SpentBudget | None = None


def surroundings(ctx: GateContext) -> Surroundings:
    """What the gates of the context's queued items read besides the item and its lane."""
    occupancy = ctx.occupancy
    return Surroundings(
        now=ctx.now,
        capacity=occupancy.usage.capacity,
        key_holders=occupancy.holders,
        fenced_leases=frozenset(occupancy.fenced_leases),
        coordination_on=rules.coordination_on(ctx.coordinator, ctx.platform_on),
        allowed_action_classes=frozenset(ctx.coordinator.config.allowed_action_classes),
        budget_spent=ctx.budget is not None,
    )


def lane_gates(ctx: GateContext) -> list[GateInfo]:
    """What holds the whole lane: the switch, a pause, open blockers."""
    hold = LaneHold.of(ctx.lane, ctx.blockers)
    on = rules.coordination_on(ctx.coordinator, ctx.platform_on)
    return [_lane_gate(ctx, gate) for gate in lane_holding_gates(hold, on)]


def item_gates(ctx: GateContext, item: Item) -> list[GateInfo]:
    """Which gates hold ``item`` (:func:`~..leasability.holding_gates`), with details and since
    when. Those waiting will not lift (nobody asking, no matching worker, a malformed
    placement) count toward escalation; the others (switch, pause, blockers, dependencies,
    backoff, capacity, keys) postpone it."""
    if item.state in (ItemState.LEASED, ItemState.RUNNING):
        return _active_gates(ctx, item)
    since = item.ready_time or item.update_time
    askers = [
        Asker.of(w)
        for w in ctx.occupancy.workers
        if item.worker_class in w.classes
        and w.last_ask_time is not None
        and w.last_ask_time >= since
    ]
    around = surroundings(ctx)
    closed = holding_gates(item, LaneHold.of(ctx.lane, ctx.blockers), around, askers)
    return [_item_gate(ctx, item, around, askers, gate) for gate in closed]


def _lane_gate(ctx: GateContext, gate: Gate) -> GateInfo:
    if gate == Gate.DISABLED:
        return GateInfo(gate.value, "coordination is switched off", None)
    if gate == Gate.PAUSED:
        return GateInfo(gate.value, "the lane is paused", ctx.lane.paused_time)
    open_blockers = [b for b in ctx.blockers if b.open]
    return GateInfo(
        gate.value,
        f"{len(open_blockers)} open blocker(s): " + "; ".join(b.reason for b in open_blockers),
        min(b.create_time for b in open_blockers),
    )


def _item_gate(
    ctx: GateContext, item: Item, around: Surroundings, askers: list[Asker], gate: Gate
) -> GateInfo:
    """``gate``, closed on ``item``, with its details and since when."""
    since = item.ready_time or item.update_time
    escalates = gate in ESCALATING_GATES
    if gate in (Gate.DISABLED, Gate.PAUSED, Gate.BLOCKED):
        return _lane_gate(ctx, gate)
    if gate == Gate.STOPPED:
        return GateInfo(gate.value, item.stop_reason, item.update_time)
    if gate == Gate.APPROVAL:
        return GateInfo(gate.value, "waiting for a human approval", item.update_time)
    if gate == Gate.DEPENDENCIES:
        by_key = {i.key: i for i in ctx.items}
        pending = [
            d for d in item.depends_on if d not in by_key or by_key[d].state != ItemState.SUCCEEDED
        ]
        detail = ", ".join(
            f"{d} ({by_key[d].state.value if d in by_key else 'missing'})" for d in pending
        )
        return GateInfo(gate.value, f"waiting for {detail}", item.create_time)
    if gate == Gate.BACKOFF:
        assert item.not_before is not None
        return GateInfo(
            gate.value, f"retry not before {item.not_before.isoformat()}", item.update_time
        )
    if gate == Gate.CAPACITY:
        used, cap = around.capacity.get(item.worker_class, (0, 0))
        leases = ctx.occupancy.usage.holding.get(item.worker_class, [])
        return GateInfo(
            gate.value,
            f"{item.worker_class} {used}/{cap} held by lease {', '.join(leases) or '-'}",
            since,
            lease_ids=list(leases),
        )
    keys = ", ".join(rules.exclusive_keys(item))
    held = sorted({around.key_holders[k] for k in held_keys(item, around)})
    if gate == Gate.EXCLUSIVE:
        detail = f"{keys} held by lease {', '.join(held)}"
        return GateInfo(gate.value, detail, since, lease_ids=held)
    if gate == Gate.FENCED and held:
        fenced = ctx.occupancy.fenced_leases
        workers = ", ".join(sorted({fenced[lease] for lease in held}))
        return GateInfo(
            gate.value,
            f"{keys} held by lease {', '.join(held)} of fenced worker {workers}",
            since,
            lease_ids=held,
        )
    if gate == Gate.FENCED:
        able = [a for a in askers if rules.placement_matches(item.placement, a.worker_id, a.worker)]
        return GateInfo(
            gate.value,
            "the only workers that could take it are fenced: "
            + ", ".join(a.worker_id for a in able),
            since,
        )
    if gate == Gate.PLACEMENT:
        problems = rules.placement_problems(item.placement)
        detail = (
            "malformed placement: " + "; ".join(problems)
            if problems
            else "no worker matching the placement is asking"
        )
        return GateInfo(gate.value, detail, since, counts_toward_escalation=escalates)
    if gate == Gate.NOBODY_ASKING:
        return GateInfo(
            gate.value,
            f"ready, but no {item.worker_class} worker has asked for work since",
            since,
            counts_toward_escalation=escalates,
        )
    if gate == Gate.POLICY:
        narrowed = disallowed_action_classes(item, ctx.coordinator.config)
        return GateInfo(
            gate.value,
            "the work coordinator no longer allows its action classes " + ", ".join(narrowed),
            since,
        )
    detail = ctx.budget.describe() if ctx.budget else "a budget covering it is spent"
    return GateInfo(gate.value, detail, since)


def _active_gates(ctx: GateContext, item: Item) -> list[GateInfo]:
    """A leased or running item is held by nothing, unless its worker is fenced (by this
    attempt or another of its own): then it says so."""
    worker_id = ctx.occupancy.fenced_leases.get(item.current_lease_id)
    if worker_id is None:
        return []
    fence = next((w.fence for w in ctx.occupancy.workers if w.worker_id == worker_id), None)
    reason = str(fence.get("reason", "")) if fence else ""
    return [
        GateInfo(
            "FENCED",
            f"its worker {worker_id} is fenced: {reason}",
            datetime.fromisoformat(str(fence["since"])) if fence and fence.get("since") else None,
            lease_ids=[item.current_lease_id],
        )
    ]
