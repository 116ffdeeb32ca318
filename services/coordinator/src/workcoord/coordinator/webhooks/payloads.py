"""The bodies of a delivery: STANDARD (``{"type", "timestamp", "data"}``) and SLACK (an
incoming-webhook message ``{"text", "blocks"}``), both carrying the link to the page that
decides the event.

A body names the event, its lane and item and what happens next, never an item's inputs,
tokens or checkpoint bodies: only the fields below leave the installation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import quote

STANDARD = "STANDARD"
SLACK = "SLACK"
FORMATS = (STANDARD, SLACK)


@dataclass(frozen=True, slots=True)
class EventFacts:
    """What a delivery says about one committed event."""

    event_id: str
    type: str
    time: datetime
    coordinator_id: str
    org_slug: str
    revision: int
    lane_id: str = ""
    item_id: str = ""
    lane_title: str = ""
    next_action: str = ""


def page_path(facts: EventFacts) -> str:
    """The org page of the event's work coordinator, opened on its lane (the page that
    decides it). A visitor without a session is sent through ``/sign-in?next=`` and the
    fragment survives the redirect."""
    fragment = f"c={quote(facts.coordinator_id, safe='')}"
    if facts.lane_id:
        fragment += f"&lane={quote(facts.lane_id, safe='')}"
    if facts.item_id:
        fragment += f"&item={quote(facts.item_id, safe='')}"
    return f"/o/{quote(facts.org_slug, safe='')}/work-coordinator#{fragment}"


def page_url(public_url: str, facts: EventFacts) -> str:
    """:func:`page_path` under the installation's public URL (``""``: a relative link)."""
    return public_url.rstrip("/") + page_path(facts)


def _timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def standard_body(facts: EventFacts, public_url: str) -> dict[str, object]:
    """The STANDARD body of ``facts``."""
    return {
        "type": facts.type,
        "timestamp": _timestamp(facts.time),
        "data": {
            "coordinatorId": facts.coordinator_id,
            "revision": facts.revision,
            "laneId": facts.lane_id,
            "itemId": facts.item_id,
            "laneTitle": facts.lane_title,
            "nextAction": facts.next_action,
            "url": page_url(public_url, facts),
        },
    }


def _headline(facts: EventFacts) -> str:
    what = facts.type.replace("_", " ").lower()
    subject = (
        f"“{facts.lane_title}”" if facts.lane_title else f"work coordinator {facts.coordinator_id}"
    )
    return f"{what.capitalize()}: {subject}"


def slack_body(facts: EventFacts, public_url: str) -> dict[str, object]:
    """The SLACK message of ``facts``: a headline, what happens next, and the page link."""
    url = page_url(public_url, facts)
    headline = _headline(facts)
    detail = f"Next: {facts.next_action}" if facts.next_action else f"Revision {facts.revision}"
    return {
        "text": f"{headline} — {url}",
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": f"*{headline}*\n{detail}"}},
            {
                "type": "actions",
                "elements": [
                    {"type": "button", "text": {"type": "plain_text", "text": "Open"}, "url": url}
                ],
            },
        ],
    }


def render(format_name: str, facts: EventFacts, public_url: str) -> bytes:
    """The body of a delivery of ``facts`` in ``format_name`` (compact UTF-8 JSON)."""
    if format_name == SLACK:
        body = slack_body(facts, public_url)
    elif format_name == STANDARD:
        body = standard_body(facts, public_url)
    else:
        raise ValueError(f"unknown webhook format {format_name!r}")
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
