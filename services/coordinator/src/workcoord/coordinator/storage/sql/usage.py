"""Usage roll-ups (see :class:`~workcoord.coordinator.domain.model.UsageTotal`).

Statements: :mod:`.statements.usage`."""

from __future__ import annotations

from collections.abc import Sequence

from workcoord.coordinator.domain.model import UsageScope, UsageTotal
from workcoord.coordinator.domain.usage import merged

from ._base import SqlTxBase
from .rows import USAGE_TOTALS
from .statements import usage as sql


class UsageSql(SqlTxBase):
    async def add_usage(self, totals: Sequence[UsageTotal]) -> None:
        """One upsert per roll-up, in key order (``usage.merged``): the rows are locked in one
        order by every writer (Lock order, docs/architecture.md)."""
        if totals:
            params = [USAGE_TOTALS.values(total) for total in merged(totals)]
            await self.conn.execute(sql.ADD_USAGE.of(self.dialect), params)

    async def usage_totals(
        self,
        coordinator_id: str,
        scope: UsageScope,
        day: str,
        keys: Sequence[str] | None = None,
    ) -> list[UsageTotal]:
        params = {"coordinator_id": coordinator_id, "scope": scope.value, "day": day}
        if keys is None:
            return await self._list(USAGE_TOTALS, sql.USAGE_TOTALS, params)
        if not keys:
            return []
        return await self._list(USAGE_TOTALS, sql.USAGE_TOTALS_OF, {**params, "keys": list(keys)})

    async def usage_days(
        self, coordinator_id: str, scope: UsageScope, key: str, since: str
    ) -> list[UsageTotal]:
        params = {"coordinator_id": coordinator_id, "scope": scope.value, "key": key}
        return await self._list(USAGE_TOTALS, sql.USAGE_DAYS, {**params, "since": since})
