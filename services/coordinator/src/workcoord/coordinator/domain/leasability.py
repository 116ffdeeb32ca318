"""Which gates hold a work item now: the one answer to "can this item be leased?" (pure: no I/O).

A QUEUED item is leased only when every gate is open. :func:`holding_gates` decides which are
closed, from the item, what holds its lane (:class:`LaneHold`), what the work coordinator's
other work holds (:class:`Surroundings`) and, optionally, the workers asking (:class:`Asker`).
The claim (``engine/leasing.py``, among the candidates a store returned), ``why``
(``engine/gates.py``, which adds details and since when) and the next-action labels
(``rules.item_next_action``) all read it, so they cannot disagree.

Where each gate is evaluated on the lease path:

- **In the store** (:data:`STORE_GATES`; SQL ``storage/sql/lanes_items.py`` ``ready_filter``,
  memory ``storage/memory/lanes_items.py`` ``ready``, which calls :func:`ready_in_store`): the
  item's state (QUEUED; a WAITING item is the dependencies gate, AWAITING_APPROVAL the approval
  gate, STOPPED waits for a human), the lane's pause and open blockers through the item's
  ``held`` mirror (the engine keeps ``held == lane.paused or any open blocker``,
  ``engine/transitions.py`` ``_set_lane_hold``), and backoff (``not_before`` after now). A
  store returns exactly the items none of these hold (a property test checks it on the
  memory store, SQLite and PostgreSQL).
- **In Python, after the store**: the switch (``disabled``: the command refuses the call before
  anything is read), capacity (the class's live attempts, plus the items this claim already
  took, against its capacity), exclusive keys (their live holders, plus the keys this claim
  already took), budget, policy (an action class the work coordinator no longer allows:
  ``domain/stops.py`` tells its live attempts to stop), placement (malformed, or not the
  asking worker's) and nobody asking (``why`` only: on the lease path the asker is asking).

The budget gate is closed when a budget covering the item is known to be spent
(``Surroundings.budget_spent``: the claim, ``why``, the labels of lanes and items and the
view's labels set it from ``engine/budgeting.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from .model import Attempt, Blocker, Item, ItemState, Lane, Worker
from .placement import exclusive_keys, placement_matches, placement_problems


class Gate(StrEnum):
    """A gate that holds an item, in the order of the domain's gates table."""

    DISABLED = "DISABLED"  # the platform or the work coordinator is switched off
    PAUSED = "PAUSED"  # the lane is paused
    BLOCKED = "BLOCKED"  # the lane has open blockers
    STOPPED = "STOPPED"  # the item waits for a human to resume or cancel it
    DEPENDENCIES = "DEPENDENCIES"  # an upstream item has not succeeded (WAITING)
    APPROVAL = "APPROVAL"  # AWAITING_APPROVAL
    BACKOFF = "BACKOFF"  # ``not_before`` is in the future
    CAPACITY = "CAPACITY"  # the class is at capacity
    EXCLUSIVE = "EXCLUSIVE"  # one of its exclusive keys is held by a live lease
    BUDGET = "BUDGET"  # the lane's or the work coordinator's budget is spent
    # It declares an action class the work coordinator no longer allows (a narrowed policy).
    POLICY = "POLICY"
    PLACEMENT = "PLACEMENT"  # a malformed placement, or no matching worker is asking
    # The exclusive gate or the worker gates, when what holds the item is a fenced worker: the
    # holder of its keys, or the only workers asking that could take it.
    FENCED = "FENCED"
    NOBODY_ASKING = "NOBODY_ASKING"  # ready, but no worker of its class is asking


# The gates a store's ready filter evaluates (see the module docstring).
STORE_GATES = frozenset(
    {Gate.PAUSED, Gate.BLOCKED, Gate.STOPPED, Gate.DEPENDENCIES, Gate.APPROVAL, Gate.BACKOFF}
)
# The gates that will not lift by themselves: only an item held by nothing else counts toward
# overdue escalation.
ESCALATING_GATES = frozenset({Gate.PLACEMENT, Gate.NOBODY_ASKING})
# States of an item waiting to be leased, gated or not; the others are leased, running or done.
AWAITING_LEASE = frozenset(
    {ItemState.QUEUED, ItemState.WAITING, ItemState.AWAITING_APPROVAL, ItemState.STOPPED}
)
_STATE_GATES = {
    ItemState.STOPPED: Gate.STOPPED,
    ItemState.AWAITING_APPROVAL: Gate.APPROVAL,
    ItemState.WAITING: Gate.DEPENDENCIES,
}


@dataclass(frozen=True, slots=True)
class LaneHold:
    """What holds every item of a lane: a pause, open blockers."""

    paused: bool = False
    blocked: bool = False

    @classmethod
    def of(cls, lane: Lane, blockers: Iterable[Blocker]) -> LaneHold:
        return cls(paused=lane.paused, blocked=any(b.open for b in blockers))

    @classmethod
    def mirrored(cls, item: Item) -> LaneHold:
        """The hold as the item's ``held`` mirror has it, where the lane is not read (stores,
        the claim, an item's label). The mirror says whether the lane holds the item, not by
        what, so a held item reads as both paused and blocked."""
        return cls(paused=item.held, blocked=item.held)


@dataclass(frozen=True, slots=True)
class Surroundings:
    """What the gates of a queued item read besides the item and its lane."""

    now: datetime
    # Worker class -> (live attempts, capacity); a class missing has no capacity (0/0).
    capacity: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    # Exclusive key -> the lease holding it (see :func:`key_holders`).
    key_holders: Mapping[str, str] = field(default_factory=dict)
    # Live leases of fenced workers (their keys stay held meanwhile).
    fenced_leases: frozenset[str] = frozenset()
    coordination_on: bool = True
    # Whether a budget covering the item is spent; None: not known (not read), and the gate is
    # open.
    budget_spent: bool | None = None
    # The action classes the work coordinator allows now; None: not known, and the policy gate
    # is open (an item's classes were checked when it was created).
    allowed_action_classes: frozenset[str] | None = None


@dataclass(frozen=True, slots=True)
class Asker:
    """A worker asking for work of the item's class (what placement and fences read)."""

    worker_id: str
    worker: Worker | None  # its registration, if any (labels)
    fenced: bool = False

    @classmethod
    def of(cls, worker: Worker) -> Asker:
        return cls(worker.worker_id, worker, fenced=worker.fence is not None)


def key_holders(live: Iterable[Attempt]) -> dict[str, str]:
    """Exclusive key -> the live lease holding it, from the live attempts (each records the
    keys it holds, as the store's holds do)."""
    return {key: a.lease_id for a in live for key in a.exclusive_key.split(",") if key}


def held_keys(item: Item, around: Surroundings) -> list[str]:
    """The item's exclusive keys that a live lease holds."""
    return [k for k in exclusive_keys(item) if k in around.key_holders]


def lane_holding_gates(lane: LaneHold, coordination_on: bool = True) -> tuple[Gate, ...]:
    """What holds every item of the lane: the switch, a pause, open blockers."""
    gates: list[Gate] = []
    if not coordination_on:
        gates.append(Gate.DISABLED)
    if lane.paused:
        gates.append(Gate.PAUSED)
    if lane.blocked:
        gates.append(Gate.BLOCKED)
    return tuple(gates)


def holding_gates(
    item: Item,
    lane: LaneHold,
    around: Surroundings | None,
    askers: Sequence[Asker] | None = None,
) -> tuple[Gate, ...]:
    """The gates closed on ``item`` now, in the table's order (empty: nothing holds it).

    An item that is leased, running or finished is past leasing: no gate holds it (see
    :func:`leasable`). A STOPPED, AWAITING_APPROVAL or WAITING item is held by its state's gate
    and its lane's. A QUEUED one also by backoff, capacity, exclusive keys and budget; those
    need ``around`` (None: not known, and not evaluated, as in a label built without them).
    The worker gates (placement, fences of the asking workers, nobody asking) are about an item
    otherwise ready, so they are evaluated only when every other gate is open, and only when
    ``askers`` is given: the workers of the item's class asking since it became ready (the
    claim passes the one asking worker). A malformed placement closes the placement gate for
    every worker.
    """
    if item.state not in AWAITING_LEASE:
        return ()
    gates = list(lane_holding_gates(lane, around is None or around.coordination_on))
    state_gate = _STATE_GATES.get(item.state)
    if state_gate is not None:
        return (*gates, state_gate)
    if around is not None:
        gates.extend(_queued_gates(item, around))
    if gates or askers is None:
        return tuple(gates)
    return _worker_gates(item, askers)


def leasable(
    item: Item, lane: LaneHold, around: Surroundings, askers: Sequence[Asker] | None = None
) -> bool:
    """Whether ``item`` may be leased now (by one of ``askers``, when given)."""
    return item.state == ItemState.QUEUED and not holding_gates(item, lane, around, askers)


def ready_in_store(item: Item, now: datetime) -> bool:
    """What a store's ready filter selects: a QUEUED item none of :data:`STORE_GATES` holds,
    the lane's hold read through the item's ``held`` mirror."""
    if item.state != ItemState.QUEUED:
        return False
    closed = holding_gates(item, LaneHold.mirrored(item), Surroundings(now))
    return not STORE_GATES.intersection(closed)


def _queued_gates(item: Item, around: Surroundings) -> list[Gate]:
    gates: list[Gate] = []
    if item.not_before is not None and item.not_before > around.now:
        gates.append(Gate.BACKOFF)
    used, cap = around.capacity.get(item.worker_class, (0, 0))
    if used >= cap:
        gates.append(Gate.CAPACITY)
    holders = {around.key_holders[k] for k in held_keys(item, around)}
    if holders:
        fenced = all(lease in around.fenced_leases for lease in holders)
        gates.append(Gate.FENCED if fenced else Gate.EXCLUSIVE)
    if around.budget_spent:
        gates.append(Gate.BUDGET)
    allowed = around.allowed_action_classes
    if allowed is not None and not allowed.issuperset(item.action_classes):
        gates.append(Gate.POLICY)
    return gates


def _worker_gates(item: Item, askers: Sequence[Asker]) -> tuple[Gate, ...]:
    if placement_problems(item.placement):
        return (Gate.PLACEMENT,)
    able = [a for a in askers if placement_matches(item.placement, a.worker_id, a.worker)]
    if able and all(a.fenced for a in able):
        return (Gate.FENCED,)
    if not able:
        return (Gate.PLACEMENT,) if item.placement else (Gate.NOBODY_ASKING,)
    return ()
