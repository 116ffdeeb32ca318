"""The digest owner's mail, as the recovery service's leader sends it: what is due now, and
marking what went out (``engine.mail``). The rules are in :mod:`..mail_marks`; the marks
are stored with the work coordinator and only move forward."""

from __future__ import annotations

from workcoord.kit.errors import InvalidArgument, NotFound, PermissionDenied

from .. import mail_marks
from ..auth import Access, Principal, PrincipalKind, authorize
from ..inputs import MarkMailSentInput
from ..model import Event
from ..notifications import HUMAN_NEEDED_EVENTS
from ..results import Digest, MailDue
from ._base import EngineService

__all__ = ["HUMAN_NEEDED_SCAN", "MailService"]

HUMAN_NEEDED_SCAN = 1000
"""Most events read after the HUMAN_NEEDED mark per call (the rest come on the next one)."""


class MailService(EngineService):
    """The mail commands (``engine.mail``): the recovery service's key only."""

    async def mail_due(self, principal: Principal, coordinator_id: str) -> MailDue:
        """Yesterday's digest unless mailed, and the HUMAN_NEEDED events after the mark once
        the 5-minute batch is over; with the first look, only where the mark starts."""
        _require_service(principal)
        now = self.core.clock.now()
        async with self.core.store.read() as reader:
            coordinator = await reader.get_coordinator(coordinator_id)
            if coordinator is None:
                raise NotFound(f"work coordinator {coordinator_id} not found")
            authorize(principal, coordinator, Access.MAINTAIN)
            owner = coordinator.config.digest_owner
            marks = coordinator.mail_marks
            window = mail_marks.mail_window(marks, now)
            digest = None
            # No digest of a day before the work coordinator existed.
            born = coordinator.create_time.date().isoformat()
            if owner and window.digest_day is not None and window.digest_day >= born:
                entries = await reader.digest_entries(coordinator_id, window.digest_day)
                digest = Digest(coordinator_id, window.digest_day, owner, entries)
            events: list[Event] = []
            through = 0
            if marks.human_needed_revision is None:
                through = coordinator.revision  # the first look: history is not mailed
            elif owner and window.human_needed_after is not None:
                scanned = await reader.list_events(
                    coordinator_id, window.human_needed_after, HUMAN_NEEDED_SCAN, "", ""
                )
                if scanned:
                    through = scanned[-1].revision
                events = [e for e in scanned if e.type in HUMAN_NEEDED_EVENTS]
            user = await reader.find_user_by_email(owner.lower()) if owner else None
            entries = digest.entries if digest is not None else []
            named = [*(e.lane_id for e in events), *(e.lane_id for e in entries)]
            lane_ids = sorted({lane_id for lane_id in named if lane_id})
            lanes = await reader.get_lanes(lane_ids) if lane_ids else []
        return MailDue(
            owner=owner,
            owner_display_name=user.display_name if user is not None else "",
            org_slug=coordinator.org_slug,
            display_name=coordinator.display_name,
            digest=digest,
            human_needed=events,
            human_needed_through=through,
            lane_titles={lane.lane_id: lane.title for lane in lanes},
        )

    async def mark_mail_sent(self, principal: Principal, input: MarkMailSentInput) -> bool:
        """Move the marks forward by what went out; whether one moved (a repeat: no)."""
        _require_service(principal)
        if input.digest_day and not _is_day(input.digest_day):
            raise InvalidArgument.single("digest_day", "must be a date, YYYY-MM-DD")
        if input.human_needed_revision < 0:
            raise InvalidArgument.single("human_needed_revision", "must not be negative")
        async with self.core.command(principal, input.coordinator_id, Access.MAINTAIN) as (
            tx,
            coordinator,
            _effects,
        ):
            moved = mail_marks.advance_marks(
                coordinator.mail_marks,
                tx.now,
                digest_day=input.digest_day,
                human_needed_revision=min(input.human_needed_revision, coordinator.revision),
                mailed=input.mailed,
            )
            if moved == coordinator.mail_marks:
                return False
            coordinator.mail_marks = moved
            await tx.update_coordinator(coordinator)
            return True


def _require_service(principal: Principal) -> None:
    if principal.kind != PrincipalKind.SERVICE:
        raise PermissionDenied("only the recovery service sends mail")


def _is_day(text: str) -> bool:
    parts = text.split("-")
    return len(text) == 10 and len(parts) == 3 and all(p.isdigit() for p in parts)
