"""Which events notify people: the event-type groups a webhook (or an e-mail) may subscribe to.

The groups are part of the public contract (``eventTypes`` of a webhook accepts an event type
name or a group name). ``HUMAN_NEEDED`` lists the events after which work waits on a person;
``LANE_OUTCOMES`` the ends of a lane. ``BUDGET_EXHAUSTED`` (a spent budget, which opens a
pending action for the digest owner) is a HUMAN_NEEDED event.
"""

from __future__ import annotations

from collections.abc import Iterable

from .model import EventType

HUMAN_NEEDED = "HUMAN_NEEDED"
LANE_OUTCOMES = "LANE_OUTCOMES"

HUMAN_NEEDED_EVENTS: frozenset[str] = frozenset(
    {
        EventType.APPROVAL_REQUESTED,
        EventType.ITEM_STOPPED,
        EventType.ITEM_DEAD_LETTERED,
        EventType.LANE_CLOSED_OUT,
        EventType.PENDING_ACTION_OPENED,
        EventType.ESCALATED,
        EventType.BUDGET_EXHAUSTED,
    }
)
LANE_OUTCOME_EVENTS: frozenset[str] = frozenset(
    {
        EventType.LANE_LIVE,
        EventType.LANE_DONE,
        EventType.LANE_CLOSED_OUT,
        EventType.LANE_CANCELLED,
    }
)

EVENT_GROUPS: dict[str, frozenset[str]] = {
    HUMAN_NEEDED: HUMAN_NEEDED_EVENTS,
    LANE_OUTCOMES: LANE_OUTCOME_EVENTS,
}


def is_subscribable(name: str) -> bool:
    """Whether ``name`` is an event type or a group a webhook may list in ``eventTypes``."""
    return name in EVENT_GROUPS or name in EventType.__members__


def expand_event_types(names: Iterable[str]) -> frozenset[str]:
    """The event types that ``names`` (event types and groups) select."""
    selected: set[str] = set()
    for name in names:
        selected |= EVENT_GROUPS.get(name, frozenset({name}))
    return frozenset(selected)


def event_id(coordinator_id: str, revision: int) -> str:
    """The id of the event at ``revision`` of a work coordinator: a delivery's ``webhook-id``
    (stable across retries and redeliveries: the receiver's dedup key)."""
    return f"evt_{coordinator_id}_{revision}"
