"""What a parent may see of a child work coordinator: ids, kinds, states, priorities,
next-action labels and timestamps — never titles, inputs, evidence, tickets or identities."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from .model import Item, ItemKind, ItemState, Lane, LaneState

__all__ = ["ChildSummary", "ItemSummary", "LaneSummary", "item_summary", "lane_summary"]


@dataclass(frozen=True, slots=True)
class LaneSummary:
    lane_id: str
    state: LaneState
    priority: int
    next_action: str
    create_time: datetime
    update_time: datetime


@dataclass(frozen=True, slots=True)
class ItemSummary:
    item_id: str
    lane_id: str
    kind: ItemKind
    state: ItemState
    priority: int
    next_action: str
    create_time: datetime
    update_time: datetime


@dataclass(slots=True)
class ChildSummary:
    revision: int
    lanes: list[LaneSummary] = field(default_factory=list)
    items: list[ItemSummary] = field(default_factory=list)


def lane_summary(lane: Lane, next_action: str) -> LaneSummary:
    return LaneSummary(
        lane.lane_id, lane.state, lane.priority, next_action, lane.create_time, lane.update_time
    )


def item_summary(item: Item, next_action: str) -> ItemSummary:
    return ItemSummary(
        item.item_id,
        item.lane_id,
        item.kind,
        item.state,
        item.priority,
        next_action,
        item.create_time,
        item.update_time,
    )
