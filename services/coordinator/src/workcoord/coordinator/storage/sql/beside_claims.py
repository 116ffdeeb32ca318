"""A group of worker writes beside a claim: what it may do before it holds the coordinator's row.

A group of worker writes (``WriteLock.WORKER_WRITES``, PostgreSQL) holds its advisory lock and
the work coordinator's row ``FOR KEY SHARE``, and so does a Lease's claim of many items
(``WriteLock.LARGE_CLAIM``, with the claims' advisory lock): the two run side by side, each
taking the row ``FOR NO KEY UPDATE`` only at its flush (a claim of a few, ``CLAIM``, takes the
row at once; a group's flush then waits for it). That is safe only while the group touches no
row a claim writes or locks: the attempts and items of its own leases (locked by the fence's
read), the WAITING items a success releases, rows no claim writes (roll-ups, digest lines)
and a lane that finishes. The port methods of :data:`HOT` (and of :data:`HOT_WHEN`, for the
arguments it names) stay within that; any other port method first takes the claims' advisory
lock and the row (``lock_row(claims_out=True)``), so from then on no claim runs beside the
group and it reads what the last claim committed. See docs/architecture.md, "Who waits for
whom".
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from workcoord.coordinator.domain.model import Lane, LaneState

if TYPE_CHECKING:
    from .store import SqlTx

__all__ = ["HOT", "HOT_WHEN", "BesideClaims"]

#: The port methods a group runs before it holds the coordinator's row: the fence's reads of
#: its own attempts and items (``FOR UPDATE``), their held-back updates, a success's lane
#: counts and WAITING dependents, the lane's retry policy, the events (numbered once the row
#: is held), roll-ups and digest lines.
HOT = frozenset(
    {
        "add_usage",
        "append",
        "attempt_with_item",
        "attempts_with_items",
        "get_lane",
        "insert_digest_entries",
        "lane_item_states",
        "lane_with_state_counts",
        "platform_enabled",
        "update_attempts",
        "update_items",
        "waiting_items",
    }
)


def _finishes_the_lane(lane: Lane) -> bool:
    """``update_lane`` of a lane going DONE: every item of it succeeded or was cancelled, so no
    claim can be leasing, or have locked, anything of it, nor write the lane's turn. The lane
    row is written at once (the only row the group then holds that the flush does not)."""
    return lane.state is LaneState.DONE


#: Port methods that are hot for some arguments: the method's name, and whether a call is.
HOT_WHEN: dict[str, Callable[..., bool]] = {"update_lane": _finishes_the_lane}


class BesideClaims:
    """The transaction a group of worker writes sees: ``tx``'s attributes, each port method
    outside :data:`HOT` keeping claims out and taking the coordinator's row first."""

    __slots__ = ("_tx",)

    def __init__(self, tx: SqlTx) -> None:
        object.__setattr__(self, "_tx", tx)

    def __getattr__(self, name: str) -> Any:
        tx = self._tx
        value = getattr(tx, name)
        if name in HOT or not tx.lock_deferred or not inspect.iscoroutinefunction(value):
            return value
        return _row_first(tx, value, HOT_WHEN.get(name))

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._tx, name, value)


def _row_first(
    tx: SqlTx, method: Callable[..., Any], hot: Callable[..., bool] | None
) -> Callable[..., Any]:
    async def call(*args: Any, **kwargs: Any) -> Any:
        if hot is None or not hot(*args, **kwargs):
            await tx.lock_row(claims_out=True)
        return await method(*args, **kwargs)

    return call
