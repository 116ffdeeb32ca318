"""The in-memory store: transactions over snapshots of the tables."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from workcoord.coordinator.domain.model import Attempt, Coordinator, Item, UsageTotal
from workcoord.coordinator.domain.ports import WriteLock, extend_in_transaction, read_in_turn
from workcoord.kit.clock import Clock

from ._base import Tables
from .accounts import AccountsMemory
from .attempts import AttemptsMemory
from .coordinators import CoordinatorsMemory
from .follow_ups import FollowUpsMemory
from .lanes_items import LanesItemsMemory
from .recovery import RecoveryMemory
from .tenancy import TenancyMemory
from .tracker_connections import TrackerConnectionsMemory
from .usage import UsageMemory
from .view_reads import ViewReadsMemory
from .webhooks import WebhooksMemory
from .workers import WorkersMemory

__all__ = ["MemoryStore", "MemoryTx"]


class MemoryTx(
    CoordinatorsMemory,
    ViewReadsMemory,
    AccountsMemory,
    TenancyMemory,
    LanesItemsMemory,
    AttemptsMemory,
    RecoveryMemory,
    WorkersMemory,
    FollowUpsMemory,
    UsageMemory,
    WebhooksMemory,
    TrackerConnectionsMemory,
):
    """One transaction over a snapshot: the Reader and Tx ports of the domain."""

    async def coordinators_and_attempts(
        self, coordinator_ids: Sequence[str], lease_ids: Sequence[str]
    ) -> tuple[dict[str, Coordinator | None], dict[str, tuple[Attempt | None, Item | None]]]:
        return await read_in_turn(self, coordinator_ids, lease_ids)

    async def extend_attempts(
        self, extended: Sequence[tuple[Attempt, Sequence[UsageTotal]]]
    ) -> set[str]:
        return await extend_in_transaction(self, extended)


class MemoryStore:
    """The storage port over dictionaries (see the package docstring)."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._tables = Tables()
        self._write_lock = asyncio.Lock()

    async def close(self) -> None:
        """Nothing to release (mirrors ``SqlStore.close``)."""

    @asynccontextmanager
    async def read(self, *, snapshot: bool = True) -> AsyncIterator[MemoryTx]:
        yield MemoryTx(self._tables, self.clock.now(), None, writable=False)

    def extend(self) -> AbstractAsyncContextManager[MemoryTx]:
        """A heartbeat round's write transaction (as ``SqlStore.extend`` on SQLite)."""
        return self.write()

    @asynccontextmanager
    async def write(
        self, coordinator_id: str | None = None, lock: WriteLock = WriteLock.ALL
    ) -> AsyncIterator[MemoryTx]:
        """A write transaction; every one waits for the one before, whatever its ``lock``."""
        async with self._write_lock:
            tx = MemoryTx(self._tables.clone(), self.clock.now(), None, writable=True)
            if coordinator_id is not None:
                tx.coordinator = await tx.get_coordinator(coordinator_id)
                tx.locked_credentials_epoch = await tx.credentials_epoch()
            yield tx
            # Reached only when the body returned: commit by swapping in the new state.
            tx.flush()
            tx.closed = True
            self._tables = tx.tables
