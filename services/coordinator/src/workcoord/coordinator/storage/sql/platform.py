"""Installation-wide rows: the platform switch and the leaderships of the recovery service.

Statements: :mod:`.statements.platform`."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.engine import Row

from workcoord.coordinator.domain.ports import Leadership, RequestRecord

from ._base import SqlTxBase
from .rows import LEADERSHIPS
from .statements import platform as sql


class PlatformSql(SqlTxBase):
    async def installation_secret(self, name: str, candidate: str) -> str:
        """The installation's secret called ``name``: ``candidate`` if none was kept yet (the
        first replica to ask keeps its own; every other one reads that)."""
        kept = {"name": name, "secret": candidate, "create_time": self.now}
        await self.conn.execute(sql.KEEP_SECRET.of(self.dialect), kept)
        row = await self._one(sql.SECRET, {"name": name})
        assert row is not None
        return str(row[0])

    async def find_request(self, scope: str, request_id: str) -> RequestRecord | None:
        row = await self._one(sql.FIND_REQUEST, {"scope": scope, "request_id": request_id})
        if row is None:
            return None
        return RequestRecord(
            row.scope, row.request_id, row.fingerprint, row.resource_id, row.create_time
        )

    async def insert_request(self, record: RequestRecord) -> None:
        params = {
            "scope": record.scope,
            "request_id": record.request_id,
            "fingerprint": record.fingerprint,
            "resource_id": record.resource_id,
            "create_time": record.create_time,
        }
        await self.conn.execute(sql.INSERT_REQUEST, params)

    async def _ensure_settings(self) -> None:
        """The settings row exists from the first work coordinator or switch change on."""
        params = {"id": 1, "work_coordinator_enabled": True, "version": 1, "update_time": self.now}
        await self.conn.execute(sql.ENSURE_SETTINGS.of(self.dialect), params)

    async def _settings(self) -> Row[Any] | None:
        return await self._one(sql.SETTINGS)

    async def platform_enabled(self) -> bool:
        if self._platform_switch is not None:  # read with the coordinator's lock
            return self._platform_switch
        row = await self._settings()
        return True if row is None else bool(row.work_coordinator_enabled)

    async def settings_row(self) -> tuple[bool, datetime, int]:
        row = await self._settings()
        if row is None:
            return True, self.now, 0
        return bool(row.work_coordinator_enabled), row.update_time, int(row.version)

    async def set_platform_enabled(self, enabled: bool, when: datetime) -> None:
        self._platform_switch = None
        await self._ensure_settings()
        await self.conn.execute(sql.SET_PLATFORM_ENABLED, {"enabled": enabled, "when": when})

    async def acquire_leadership(
        self, name: str, holder_id: str, now: datetime, expire_time: datetime
    ) -> Leadership:
        first = {"name": name, "holder_id": holder_id, "expire_time": expire_time, "term": 1}
        await self.conn.execute(sql.CLAIM_LEADERSHIP.of(self.dialect), first)
        current = await self._get(LEADERSHIPS, sql.LOCK_LEADERSHIP, {"name": name})
        assert current is not None
        if current.holder_id != holder_id and current.expire_time > now:
            return current
        term = current.term if current.holder_id == holder_id else current.term + 1
        params = {"b_name": name, "holder_id": holder_id, "expire_time": expire_time, "term": term}
        await self.conn.execute(sql.SET_LEADERSHIP, params)
        return Leadership(name, holder_id, expire_time, term)

    async def release_leadership(self, name: str, holder_id: str) -> Leadership | None:
        current = await self._get(LEADERSHIPS, sql.GET_LEADERSHIP, {"name": name})
        if current is None or current.holder_id != holder_id:
            return current
        await self.conn.execute(sql.END_LEADERSHIP, {"b_name": name, "expire_time": self.now})
        return Leadership(name, holder_id, self.now, current.term)
