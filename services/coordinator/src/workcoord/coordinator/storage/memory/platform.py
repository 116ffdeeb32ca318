"""The platform switch and the leaderships, in memory: the twin of :mod:`..sql.platform`."""

from __future__ import annotations

import dataclasses
from datetime import datetime

from workcoord.coordinator.domain.ports import Leadership, RequestRecord

from ._base import MemoryTxBase, Settings, refuse


class PlatformMemory(MemoryTxBase):
    async def installation_secret(self, name: str, candidate: str) -> str:
        return self._w().installation_secrets.setdefault(name, candidate)

    async def find_request(self, scope: str, request_id: str) -> RequestRecord | None:
        return self.tables.request_ids.get((scope, request_id))

    async def insert_request(self, record: RequestRecord) -> None:
        requests = self._w().request_ids
        key = (record.scope, record.request_id)
        if key in requests:
            refuse("pk_request_ids")
        requests[key] = record

    def _ensure_settings(self) -> Settings:
        tables = self._w()
        if tables.settings is None:
            tables.settings = Settings(enabled=True, update_time=self.now, version=1)
        return tables.settings

    async def platform_enabled(self) -> bool:
        settings = self.tables.settings
        return True if settings is None else settings.enabled

    async def settings_row(self) -> tuple[bool, datetime, int]:
        settings = self.tables.settings
        if settings is None:
            return True, self.now, 0
        return settings.enabled, settings.update_time, settings.version

    async def set_platform_enabled(self, enabled: bool, when: datetime) -> None:
        current = self._ensure_settings()
        self._w().settings = dataclasses.replace(
            current, enabled=enabled, update_time=when, version=current.version + 1
        )

    async def acquire_leadership(
        self, name: str, holder_id: str, now: datetime, expire_time: datetime
    ) -> Leadership:
        leaderships = self._w().leaderships
        current = leaderships.setdefault(name, Leadership(name, holder_id, expire_time, 1))
        if current.holder_id != holder_id and current.expire_time > now:
            return current
        term = current.term if current.holder_id == holder_id else current.term + 1
        leaderships[name] = Leadership(name, holder_id, expire_time, term)
        return leaderships[name]

    async def release_leadership(self, name: str, holder_id: str) -> Leadership | None:
        leaderships = self._w().leaderships
        current = leaderships.get(name)
        if current is None or current.holder_id != holder_id:
            return current
        leaderships[name] = Leadership(name, holder_id, self.now, current.term)
        return leaderships[name]
