"""The digest owner's mail: what is due, and how its marks move.

The digest owner is mailed yesterday's digest once a UTC day (from the first whole day of the
work coordinator on), and the HUMAN_NEEDED events (:data:`.notifications.HUMAN_NEEDED_EVENTS`)
in batches: at most one mail every :data:`HUMAN_NEEDED_MAIL_EVERY`, holding every such event
since the last one mailed. The marks (:class:`~.model.MailMarks`) are stored with the work
coordinator and only move forward, so a mail goes out once across recovery replicas and
restarts. The first time a work coordinator is looked at, its history is not mailed: the
HUMAN_NEEDED mark starts at its current revision.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from .model import MailMarks

__all__ = ["HUMAN_NEEDED_MAIL_EVERY", "MailWindow", "advance_marks", "mail_window"]

HUMAN_NEEDED_MAIL_EVERY = timedelta(minutes=5)
"""At most one HUMAN_NEEDED mail per digest owner (work coordinator) this often."""


@dataclass(frozen=True, slots=True)
class MailWindow:
    """What may be mailed now: the digest day due (None: none), and the revision after which
    HUMAN_NEEDED events may be mailed (None: the batch is still open, or the mark is unset)."""

    digest_day: str | None
    human_needed_after: int | None


def mail_window(marks: MailMarks, now: datetime) -> MailWindow:
    """What ``marks`` leave due at ``now`` (UTC)."""
    yesterday = (now.date() - timedelta(days=1)).isoformat()
    digest_day = yesterday if (marks.digest_day or "") < yesterday else None
    after: int | None = marks.human_needed_revision
    if after is not None and marks.human_needed_time is not None:
        last = datetime.fromisoformat(marks.human_needed_time)
        if now - last < HUMAN_NEEDED_MAIL_EVERY:
            after = None
    return MailWindow(digest_day, after)


def advance_marks(
    marks: MailMarks,
    now: datetime,
    *,
    digest_day: str = "",
    human_needed_revision: int = 0,
    mailed: bool = True,
) -> MailMarks:
    """``marks`` moved forward by what went out (never back): a repeat changes nothing.
    ``mailed`` false moves the HUMAN_NEEDED mark over events that needed no mail, without
    opening a batch."""
    moved = marks
    if digest_day and digest_day > (marks.digest_day or ""):
        moved = replace(moved, digest_day=digest_day)
    current = marks.human_needed_revision
    if human_needed_revision and (current is None or human_needed_revision > current):
        # The first mark (from None) only starts the count: no mail went out, no batch opens.
        sent = mailed and current is not None
        sent_time = now.isoformat() if sent else marks.human_needed_time
        moved = replace(
            moved, human_needed_revision=human_needed_revision, human_needed_time=sent_time
        )
    return moved
