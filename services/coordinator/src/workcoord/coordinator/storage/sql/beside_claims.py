"""A group of worker writes beside a claim: what it may do before it holds the coordinator's row.

A group of worker writes (``WriteLock.WORKER_WRITES``, PostgreSQL) holds its advisory lock and
the work coordinator's row ``FOR KEY SHARE``, so a Lease's claim (``WriteLock.CLAIM``, the row
``FOR NO KEY UPDATE``) runs beside it. That is safe only while the group touches no row a
claim writes: the attempts and items of its own leases (locked by the fence's read), the
WAITING items a success releases, and rows no claim writes (roll-ups, digest lines). The port
methods of :data:`HOT` stay within that; any other port method first takes the row
(``lock_row``), so from then on no claim runs beside the group and it reads what the last
claim committed. See docs/architecture.md, "Who waits for whom".
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .store import SqlTx

__all__ = ["HOT", "BesideClaims"]

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


class BesideClaims:
    """The transaction a group of worker writes sees: ``tx``'s attributes, each port method
    outside :data:`HOT` taking the coordinator's row first."""

    __slots__ = ("_tx",)

    def __init__(self, tx: SqlTx) -> None:
        object.__setattr__(self, "_tx", tx)

    def __getattr__(self, name: str) -> Any:
        tx = self._tx
        value = getattr(tx, name)
        if name in HOT or not tx.lock_deferred or not inspect.iscoroutinefunction(value):
            return value
        return _row_first(tx, value)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._tx, name, value)


def _row_first(tx: SqlTx, method: Callable[..., Any]) -> Callable[..., Any]:
    async def call(*args: Any, **kwargs: Any) -> Any:
        await tx.lock_row()
        return await method(*args, **kwargs)

    return call
