"""The platform's settings: its switch, which turns coordination off (and on again) for every
work coordinator at once."""

from __future__ import annotations

from workcoord.kit.bus import Notification
from workcoord.kit.errors import EtagMismatch, PermissionDenied

from ..auth import Principal, require_platform_admin
from ..results import PlatformSettings
from ._base import EngineCore

__all__ = ["Platform"]


class Platform:
    """The platform's settings, over the engine's shared core."""

    def __init__(self, core: EngineCore) -> None:
        self.core = core

    async def get_settings(self, principal: Principal) -> PlatformSettings:
        if not principal.is_human:
            raise PermissionDenied("only humans read platform settings")
        async with self.core.store.read() as reader:
            return PlatformSettings(*await reader.settings_row())

    async def update_settings(
        self, principal: Principal, enabled: bool | None, etag: str
    ) -> PlatformSettings:
        """Switch coordination on or off for the whole platform (``None``: leave it); a
        non-empty ``etag`` must be the settings' current one."""
        require_platform_admin(principal)
        async with self.core.store.write() as tx:
            current, _, version = await tx.settings_row()
            if etag and etag != str(version):
                raise EtagMismatch()
            if enabled is not None and enabled != current:
                await tx.set_platform_enabled(enabled, tx.now)
            settings = PlatformSettings(*await tx.settings_row())
        if enabled:
            # Wake every long-poll: work may be leasable again.
            async with self.core.store.read() as reader:
                coordinators = await reader.list_coordinators("", 10_000, None)
            for c in coordinators:
                await self.core.bus.publish(Notification(c.coordinator_id, c.revision, frozenset()))
        return settings
