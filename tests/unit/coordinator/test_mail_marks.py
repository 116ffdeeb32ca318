"""The digest owner's mail marks: what is due (yesterday's digest once, HUMAN_NEEDED events in
5-minute batches, never the history before the first look), and marks that only move forward,
so a repeat or a second replica mails nothing twice."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from workcoord.coordinator.domain import mail_marks as notifications
from workcoord.coordinator.domain.auth import RECOVERY
from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.domain.inputs import MarkMailSentInput
from workcoord.coordinator.domain.model import MailMarks
from workcoord.kit.clock import ManualClock
from workcoord.kit.errors import InvalidArgument, PermissionDenied

from .harness import ADMIN, World, new_lane, task

NOON = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def test_yesterdays_digest_is_due_once() -> None:
    assert notifications.mail_window(MailMarks(), NOON).digest_day == "2026-11-30"
    sent = notifications.advance_marks(MailMarks(), NOON, digest_day="2026-11-30")
    assert notifications.mail_window(sent, NOON).digest_day is None
    assert notifications.mail_window(sent, NOON + timedelta(days=1)).digest_day == "2026-12-01"
    # Never back.
    assert notifications.advance_marks(sent, NOON, digest_day="2026-11-01") == sent


def test_human_needed_mail_waits_for_the_batch_and_the_first_mark_opens_none() -> None:
    started = notifications.advance_marks(MailMarks(), NOON, human_needed_revision=7)
    assert started == MailMarks(human_needed_revision=7)
    assert notifications.mail_window(started, NOON).human_needed_after == 7
    mailed = notifications.advance_marks(started, NOON, human_needed_revision=9)
    assert mailed.human_needed_time == NOON.isoformat()
    almost = NOON + notifications.HUMAN_NEEDED_MAIL_EVERY - timedelta(seconds=1)
    assert notifications.mail_window(mailed, almost).human_needed_after is None
    over = NOON + notifications.HUMAN_NEEDED_MAIL_EVERY
    assert notifications.mail_window(mailed, over).human_needed_after == 9
    skipped = notifications.advance_marks(mailed, over, human_needed_revision=12, mailed=False)
    assert skipped.human_needed_time == mailed.human_needed_time  # no mail: no new batch
    assert notifications.advance_marks(skipped, over, human_needed_revision=3) == skipped


async def test_the_engine_mails_what_is_due_once(
    engine: Engine, world: World, clock: ManualClock
) -> None:
    first = await engine.mail.mail_due(RECOVERY, world.cid)
    assert first.owner == world.coordinator.config.digest_owner
    assert first.digest is None  # no digest of a day before the work coordinator existed
    assert first.human_needed == []
    clock.advance(timedelta(days=1).total_seconds())
    first = await engine.mail.mail_due(RECOVERY, world.cid)
    assert first.digest is not None and first.human_needed == []
    assert first.human_needed_through == world.coordinator.revision  # the history is not mailed
    mark = MarkMailSentInput(
        coordinator_id=world.cid,
        digest_day=first.digest.day,
        human_needed_revision=first.human_needed_through,
    )
    assert await engine.mail.mark_mail_sent(RECOVERY, mark) is True
    assert await engine.mail.mark_mail_sent(RECOVERY, mark) is False  # a repeat moves nothing

    await new_lane(engine, world, task("h", needs_human=True), title="Needs a person")
    due = await engine.mail.mail_due(RECOVERY, world.cid)
    assert due.digest is None
    assert [e.type.value for e in due.human_needed] == ["ITEM_STOPPED"]
    assert due.lane_titles == {due.human_needed[0].lane_id: "Needs a person"}
    sent = MarkMailSentInput(
        coordinator_id=world.cid, human_needed_revision=due.human_needed_through
    )
    assert await engine.mail.mark_mail_sent(RECOVERY, sent) is True
    # Within the batch: nothing more until five minutes after that mail.
    await new_lane(engine, world, task("h2", needs_human=True), title="Another")
    assert (await engine.mail.mail_due(RECOVERY, world.cid)).human_needed == []
    clock.advance(notifications.HUMAN_NEEDED_MAIL_EVERY.total_seconds())
    later = await engine.mail.mail_due(RECOVERY, world.cid)
    assert [e.lane_id for e in later.human_needed] == [
        e.lane_id for e in later.human_needed if later.lane_titles[e.lane_id] == "Another"
    ]
    assert len(later.human_needed) == 1


async def test_only_the_service_key_mails(engine: Engine, world: World) -> None:
    with pytest.raises(PermissionDenied):
        await engine.mail.mail_due(ADMIN, world.cid)
    with pytest.raises(PermissionDenied):
        await engine.mail.mark_mail_sent(ADMIN, MarkMailSentInput(coordinator_id=world.cid))
    with pytest.raises(InvalidArgument):
        await engine.mail.mark_mail_sent(
            RECOVERY, MarkMailSentInput(coordinator_id=world.cid, digest_day="yesterday")
        )
