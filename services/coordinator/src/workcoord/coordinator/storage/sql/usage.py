"""Usage roll-ups (see :class:`~workcoord.coordinator.domain.model.UsageTotal`).

Statements: :mod:`.statements.usage`."""

from __future__ import annotations

from collections.abc import Sequence

from workcoord.coordinator.domain.model import UsageScope, UsageTotal

from ._base import SqlTxBase
from .rows import USAGE_TOTALS
from .statements import usage as sql


class UsageSql(SqlTxBase):
    async def add_usage(self, totals: Sequence[UsageTotal]) -> None:
        """Add ``totals`` to their roll-ups, each roll-up once and in key order
        (``usage.merged``): the rows are locked in one order by every writer (Lock order,
        docs/architecture.md). On PostgreSQL they are held back and added by the flush's one
        statement, so a heartbeat round or a group's Complete spends no round trip on them; a
        read of roll-ups in the transaction adds them first. Elsewhere: one upsert per roll-up,
        now."""
        self._pending_usage.extend(totals)
        if self.dialect != "postgresql":
            await self.write_held_back_usage()

    async def usage_totals(
        self,
        coordinator_id: str,
        scope: UsageScope,
        day: str,
        keys: Sequence[str] | None = None,
    ) -> list[UsageTotal]:
        """The roll-ups of ``scope`` (of ``keys``). A writer that takes the coordinator's row
        late (a large claim, reading its budgets) takes it first: a spend committed beside it
        is then read, and none commits between the read and its own commit."""
        await self.lock_row()
        await self.write_held_back_usage()
        params = {"coordinator_id": coordinator_id, "scope": scope.value, "day": day}
        if keys is None:
            return await self._list(USAGE_TOTALS, sql.USAGE_TOTALS, params)
        if not keys:
            return []
        return await self._list(USAGE_TOTALS, sql.USAGE_TOTALS_OF, {**params, "keys": list(keys)})

    async def usage_days(
        self, coordinator_id: str, scope: UsageScope, key: str, since: str
    ) -> list[UsageTotal]:
        await self.lock_row()  # as usage_totals
        await self.write_held_back_usage()
        params = {"coordinator_id": coordinator_id, "scope": scope.value, "key": key}
        return await self._list(USAGE_TOTALS, sql.USAGE_DAYS, {**params, "since": since})
