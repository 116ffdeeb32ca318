"""Converted lanes of the view, reused while their details have not changed.

The engine's view cache hands out the very same lane, item, attempt, blocker and ticket
objects for a lane nothing has changed in (and never changes them), so a lane whose details
are the same objects as last time converts to the same message, but for the inputs of the next
action of its queued items that are the coordinator's, not the lane's
(``rules.item_next_action``): the capacity in use of their classes (``wait: CLASS used/cap``),
the holders of their exclusive keys (``wait: KEY held``), and whether those backing off still
are at the time of the call (``wait: backoff``), and whether a budget covering the lane is
spent (``wait: budget``). A converted lane is reused only when these are
also what they were.

Identity (``is``), not equality, decides: the cache holds the objects it compared, so an id
is never reused while its entry lives, and comparing is free. Details built afresh (tests, a
first call) simply convert. The cache is bounded by the items it holds, least recently used out.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from workcoord.api.v1 import lane_pb2, work_coordinator_pb2
from workcoord.coordinator.domain import rules
from workcoord.coordinator.domain.model import Item, ItemState
from workcoord.coordinator.domain.results import LaneDetail

from .lanes import lane_to_pb

LabelKey = tuple[object, ...]


@dataclass(frozen=True, slots=True)
class _Queued:
    """What of a lane's queued items' labels depends on more than the lane (not held ones: a
    held item's label is the lane's hold)."""

    classes: tuple[str, ...]
    keys: tuple[str, ...]  # their exclusive keys
    backing_off: tuple[Item, ...]  # those with a retry time

    @classmethod
    def of(cls, detail: LaneDetail) -> _Queued:
        queued = [i for i in detail.items if i.state == ItemState.QUEUED and not i.held]
        return cls(
            classes=tuple(sorted({i.worker_class for i in queued})),
            keys=tuple(sorted({k for i in queued for k in rules.exclusive_keys(i)})),
            backing_off=tuple(i for i in queued if i.not_before is not None),
        )

    def label_key(self, detail: LaneDetail) -> LabelKey | None:
        around = detail.surroundings
        if around is None:
            return None
        return (
            tuple(around.capacity.get(c) for c in self.classes),
            tuple(around.key_holders.get(k) for k in self.keys),
            tuple(i.not_before is not None and i.not_before > around.now for i in self.backing_off),
            around.budget_spent,
        )


@dataclass(frozen=True, slots=True)
class _Converted:
    detail: LaneDetail  # holds the objects compared by identity
    queued: _Queued
    labels: LabelKey | None
    message: lane_pb2.Lane

    def serves(self, detail: LaneDetail) -> bool:
        held = self.detail
        return (
            held.lane is detail.lane
            and held.items is detail.items
            and held.attempts is detail.attempts
            and held.blockers is detail.blockers
            and held.tickets is detail.tickets
            and self.labels == self.queued.label_key(detail)
        )


class LaneMessages:
    """Lane id -> its last conversion, bounded by ``max_items`` items."""

    def __init__(self, max_items: int = 50_000) -> None:
        self.max_items = max_items
        self._items = 0
        self._lanes: OrderedDict[str, _Converted] = OrderedDict()

    def lane(self, detail: LaneDetail) -> lane_pb2.Lane:
        """The lane as :func:`lane_to_pb` converts it (a cached message: copy, never change)."""
        lane_id = detail.lane.lane_id
        held = self._lanes.get(lane_id)
        if held is not None and held.serves(detail):
            self._lanes.move_to_end(lane_id)
            return held.message
        message = lane_to_pb(detail)
        queued = _Queued.of(detail)
        if held is not None:
            self._items -= len(held.detail.items)
        self._lanes[lane_id] = _Converted(detail, queued, queued.label_key(detail), message)
        self._lanes.move_to_end(lane_id)
        self._items += len(detail.items)
        while self._items > self.max_items and self._lanes:
            _, dropped = self._lanes.popitem(last=False)
            self._items -= len(dropped.detail.items)
        return message

    def __len__(self) -> int:
        return len(self._lanes)


@dataclass(slots=True)
class _Answer:
    head: bytes  # everything but the lanes, serialized deterministically
    lanes: tuple[lane_pb2.Lane, ...]
    items: int
    response: work_coordinator_pb2.GetViewResponse
    wire: bytes | None = None  # the response serialized, once it was sent


class ViewResponses:
    """Per work coordinator, the last ``GetView`` answer, reused while nothing in it changed:
    copying ten thousand items into a new answer costs more than everything else of a call.
    Bounded by the items the answers hold, least recently used out."""

    def __init__(self, max_items: int = 50_000) -> None:
        self.max_items = max_items
        self._items = 0
        self._answers: OrderedDict[str, _Answer] = OrderedDict()

    def response(
        self,
        coordinator_id: str,
        head: work_coordinator_pb2.View,
        lanes: list[lane_pb2.Lane],
    ) -> work_coordinator_pb2.GetViewResponse:
        """The answer of ``head`` with ``lanes`` (messages of :data:`LANE_MESSAGES`)."""
        key = head.SerializeToString(deterministic=True)
        held = self._answers.get(coordinator_id)
        if (
            held is not None
            and held.head == key
            and len(held.lanes) == len(lanes)
            and all(a is b for a, b in zip(held.lanes, lanes, strict=True))
        ):
            self._answers.move_to_end(coordinator_id)
            return held.response
        response = work_coordinator_pb2.GetViewResponse()
        response.view.CopyFrom(head)
        response.view.lanes.extend(lanes)
        if held is not None:
            del self._answers[coordinator_id]
            self._items -= held.items
        items = sum(len(lane.items) for lane in lanes)
        if items <= self.max_items:
            self._answers[coordinator_id] = _Answer(key, tuple(lanes), items, response)
            self._items += items
        while self._items > self.max_items:
            _, dropped = self._answers.popitem(last=False)
            self._items -= dropped.items
        return response

    def serialized(
        self,
        response: work_coordinator_pb2.GetViewResponse,
        serialize: Callable[[work_coordinator_pb2.GetViewResponse], bytes],
    ) -> bytes:
        """``response`` on the wire: serialized once if it is a held answer (by identity: the
        answer is held, so its id is never reused meanwhile), else by ``serialize``."""
        coordinator_id = response.view.work_coordinator.coordinator_id
        held = self._answers.get(coordinator_id)
        if held is None or held.response is not response:
            return serialize(response)
        if held.wire is None:
            held.wire = serialize(response)
        return held.wire

    def __len__(self) -> int:
        return len(self._answers)


# The process's converted lanes (GetView and the feed's snapshots) and last answers.
LANE_MESSAGES = LaneMessages()
VIEW_RESPONSES = ViewResponses()
