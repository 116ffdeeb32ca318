"""Which events notify people: the event-type groups a webhook (or an e-mail) may subscribe to.

``HUMAN_NEEDED`` lists the events after which work waits on a person; ``LANE_OUTCOMES`` the
ends of a lane. ``BUDGET_EXHAUSTED`` is named by the contract's group but has no event of its
own yet, so it matches nothing until such an event exists.
"""

from __future__ import annotations

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
