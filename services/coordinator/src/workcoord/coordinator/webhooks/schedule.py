"""When a failed delivery is tried again, and when it is given up.

Retries wait 1 s, doubling up to 1 h, for 24 h from the event's commit; then the delivery is
DEAD. A webhook whose deliveries have failed without a success for 24 h is disabled.
"""

from __future__ import annotations

from datetime import datetime, timedelta

FIRST_DELAY = timedelta(seconds=1)
MAX_DELAY = timedelta(hours=1)
GIVE_UP_AFTER = timedelta(hours=24)
DISABLE_AFTER = timedelta(hours=24)


def retry_delay(attempt: int) -> timedelta:
    """The wait after the ``attempt``-th failed try (1-based): 1 s, 2 s, 4 s … capped at 1 h."""
    if attempt < 1:
        raise ValueError("attempt counts from 1")
    seconds = FIRST_DELAY.total_seconds() * 2 ** min(attempt - 1, 32)
    return min(timedelta(seconds=seconds), MAX_DELAY)


def next_attempt_time(created: datetime, attempt: int, now: datetime) -> datetime | None:
    """When to try a delivery again after its ``attempt``-th failure at ``now``; None when the
    next try would fall after :data:`GIVE_UP_AFTER` from ``created`` (the delivery is DEAD)."""
    due = now + retry_delay(attempt)
    return None if due - created > GIVE_UP_AFTER else due


def should_disable(failing_since: datetime | None, now: datetime) -> bool:
    """Whether a webhook failing since ``failing_since`` (None: not failing) is disabled."""
    return failing_since is not None and now - failing_since >= DISABLE_AFTER
