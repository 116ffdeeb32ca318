"""Which gates hold an item or a lane, with details and since when (pure: no I/O)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from .. import rules
from ..model import TERMINAL_ITEM_STATES, Blocker, Coordinator, Item, ItemState, Lane, Worker
from ..results import GateInfo


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


def lane_gates(ctx: GateContext) -> list[GateInfo]:
    """What holds the whole lane: the switch, a pause, open blockers."""
    gates: list[GateInfo] = []
    if not rules.coordination_on(ctx.coordinator, ctx.platform_on):
        gates.append(GateInfo("DISABLED", "coordination is switched off", None))
    if ctx.lane.paused:
        gates.append(GateInfo("PAUSED", "the lane is paused", ctx.lane.paused_time))
    open_blockers = [b for b in ctx.blockers if b.open]
    if open_blockers:
        gates.append(
            GateInfo(
                "BLOCKED",
                f"{len(open_blockers)} open blocker(s): "
                + "; ".join(b.reason for b in open_blockers),
                min(b.create_time for b in open_blockers),
            )
        )
    return gates


def item_gates(ctx: GateContext, item: Item) -> list[GateInfo]:
    """Which gates hold ``item``, with details and since when. Those waiting will not lift
    (nobody asking, no matching worker, a malformed placement) count toward escalation; the
    others (switch, pause, blockers, dependencies, backoff, capacity, keys) postpone it."""
    if item.state in (ItemState.LEASED, ItemState.RUNNING):
        return _active_gates(ctx, item)
    if item.state in TERMINAL_ITEM_STATES:
        return []
    gates = lane_gates(ctx)
    if item.state == ItemState.STOPPED:
        gates.append(GateInfo("STOPPED", item.stop_reason, item.update_time))
        return gates
    if item.state == ItemState.AWAITING_APPROVAL:
        gates.append(GateInfo("APPROVAL", "waiting for a human approval", item.update_time))
        return gates
    if item.state == ItemState.WAITING:
        by_key = {i.key: i for i in ctx.items}
        pending = [
            d for d in item.depends_on if d not in by_key or by_key[d].state != ItemState.SUCCEEDED
        ]
        detail = ", ".join(
            f"{d} ({by_key[d].state.value if d in by_key else 'missing'})" for d in pending
        )
        gates.append(GateInfo("DEPENDENCIES", f"waiting for {detail}", item.create_time))
        return gates
    # QUEUED
    if item.not_before is not None and item.not_before > ctx.now:
        gates.append(
            GateInfo("BACKOFF", f"retry not before {item.not_before.isoformat()}", item.update_time)
        )
    used, cap = ctx.occupancy.usage.capacity.get(item.worker_class, (0, 0))
    since = item.ready_time or item.update_time
    if used >= cap:
        leases = ctx.occupancy.usage.holding.get(item.worker_class, [])
        gates.append(
            GateInfo(
                "CAPACITY",
                f"{item.worker_class} {used}/{cap} held by lease {', '.join(leases) or '-'}",
                since,
                lease_ids=list(leases),
            )
        )
    holders = ctx.occupancy.holders
    held = sorted({holders[k] for k in rules.exclusive_keys(item) if k in holders})
    fenced = ctx.occupancy.fenced_leases
    if held and all(lease in fenced for lease in held):
        workers = ", ".join(sorted({fenced[lease] for lease in held}))
        gates.append(
            GateInfo(
                "FENCED",
                f"{', '.join(rules.exclusive_keys(item))} held by lease {', '.join(held)} of "
                f"fenced worker {workers}",
                since,
                lease_ids=held,
            )
        )
    elif held:
        gates.append(
            GateInfo(
                "EXCLUSIVE",
                f"{', '.join(rules.exclusive_keys(item))} held by lease {', '.join(held)}",
                since,
                lease_ids=held,
            )
        )
    if gates:
        return gates
    problems = rules.placement_problems(item.placement)
    if problems:
        gates.append(
            GateInfo(
                "PLACEMENT",
                "malformed placement: " + "; ".join(problems),
                since,
                counts_toward_escalation=True,
            )
        )
        return gates
    same_class = [w for w in ctx.occupancy.workers if w.worker_class == item.worker_class]
    asking = [w for w in same_class if w.last_ask_time is not None and w.last_ask_time >= since]
    able = [w for w in asking if rules.placement_matches(item.placement, w.worker_id, w)]
    if able and all(w.fence for w in able):
        gates.append(
            GateInfo(
                "FENCED",
                "the only workers that could take it are fenced: "
                + ", ".join(w.worker_id for w in able),
                since,
            )
        )
    elif item.placement and not any(
        rules.placement_matches(item.placement, w.worker_id, w) for w in asking
    ):
        gates.append(
            GateInfo(
                "PLACEMENT",
                "no worker matching the placement is asking",
                since,
                counts_toward_escalation=True,
            )
        )
    elif not asking:
        gates.append(
            GateInfo(
                "NOBODY_ASKING",
                f"ready, but no {item.worker_class} worker has asked for work since",
                since,
                counts_toward_escalation=True,
            )
        )
    return gates


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
