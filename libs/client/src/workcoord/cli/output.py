"""``--output table|json`` for the commands that read: proto3 JSON (the default, for scripts)
or aligned text tables for people.

A table renderer is chosen by the message's full name; a response that only wraps one message
(``GetLaneResponse`` → ``Lane``) is rendered as that message, and anything without a renderer
as ``field: value`` lines. ``WORKCOORD_OUTPUT`` sets the default.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from google.protobuf import json_format
from google.protobuf.message import Message

from workcoord.cli import profiles

__all__ = [
    "OUTPUT_ENV",
    "add_output_flag",
    "format_table",
    "print_result",
    "render_table",
]

OUTPUT_ENV = "WORKCOORD_OUTPUT"
_CELL_LIMIT = 60

_Renderer = Callable[[dict[str, Any]], list[str]]
_RENDERERS: dict[str, _Renderer] = {}


def add_output_flag(parser: argparse.ArgumentParser) -> None:
    """``--output table|json`` (``-o``), default ``$WORKCOORD_OUTPUT`` or json; once only, so
    a command that added it already keeps its own."""
    if "--output" in parser._option_string_actions:
        return
    default = os.environ.get(OUTPUT_ENV) or profiles.active("output") or "json"
    parser.add_argument(
        "-o",
        "--output",
        choices=("json", "table"),
        default=default if default in ("json", "table") else "json",
        help=f"json (proto3 JSON, the default) or table (for people); env {OUTPUT_ENV}, then the "
        "profile",
    )


def print_result(message: Message, output: str = "json", stream: TextIO | None = None) -> None:
    """Print ``message`` as proto3 JSON or as a table."""
    out = stream or sys.stdout
    if output == "table":
        print(render_table(message), file=out)
    else:
        print(json_format.MessageToJson(message, indent=2), file=out)


def render_table(message: Message) -> str:
    """The text form of ``message`` for people."""
    name = message.DESCRIPTOR.full_name
    document = json_format.MessageToDict(message)
    renderer = _RENDERERS.get(name)
    if renderer is None:
        wrapped = [f for f in message.DESCRIPTOR.fields if f.message_type is not None]
        if len(message.DESCRIPTOR.fields) == 1 and len(wrapped) == 1 and not _repeated(wrapped[0]):
            return render_table(getattr(message, wrapped[0].name))
        listed = [f for f in wrapped if _repeated(f) and not _is_map(f)]
        if len(listed) == 1 and name.split(".")[-1].startswith("List"):
            return "\n".join(_generic_list(document, listed[0].json_name))
        return "\n".join(_fields(document)) or "(empty)"
    return "\n".join(renderer(document))


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """Columns aligned on the widest cell; long cells cut with an ellipsis."""
    cells = [[_cell(value) for value in row] for row in rows]
    widths = [len(header) for header in headers]
    for row in cells:
        for index, value in enumerate(row):
            widths[index] = max(widths[index], len(value))
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    for row in cells:
        lines.append("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
    return lines


def _repeated(field: Any) -> bool:
    is_repeated = getattr(field, "is_repeated", None)  # protobuf ≥ 5.29; ``label`` before
    if is_repeated is not None:
        return bool(is_repeated)
    return bool(field.label == field.LABEL_REPEATED)


def _is_map(field: Any) -> bool:
    return bool(field.message_type is not None and field.message_type.GetOptions().map_entry)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        text = ",".join(f"{k}={v}" for k, v in value.items())
    elif isinstance(value, list):
        text = ",".join(str(v) for v in value)
    else:
        text = str(value)
    indent = text[: len(text) - len(text.lstrip(" "))]  # nesting shown by leading spaces
    text = indent + (" ".join(text.split()) or "-")
    return text if len(text) <= _CELL_LIMIT else text[: _CELL_LIMIT - 1] + "…"


def _fields(document: dict[str, Any], prefix: str = "") -> list[str]:
    lines: list[str] = []
    for key, value in document.items():
        if isinstance(value, dict) and value:
            lines.extend(_fields(value, f"{prefix}{key}."))
        else:
            lines.append(f"{prefix}{key}: {_cell(value)}")
    return lines


def _generic_list(doc: dict[str, Any], key: str, max_columns: int = 8) -> list[str]:
    """A table of any ``List…Response`` without a renderer of its own: one row per entry, a
    column per field (in the order first seen, at most ``max_columns``)."""
    entries: list[dict[str, Any]] = doc.get(key, [])
    columns: list[str] = []
    for entry in entries:
        columns.extend(k for k in entry if k not in columns)
    columns = columns[:max_columns]
    if not entries:
        return _with_next_page([f"(no {key})"], doc)
    rows = [[entry.get(column) for column in columns] for entry in entries]
    headers = [_header(column) for column in columns]
    return _with_next_page(format_table(headers, rows), doc)


def _header(json_name: str) -> str:
    """``displayName`` → ``DISPLAY NAME``."""
    return "".join(f" {c}" if c.isupper() else c.upper() for c in json_name).strip()


def _renders(*names: str) -> Callable[[_Renderer], _Renderer]:
    def register(renderer: _Renderer) -> _Renderer:
        for name in names:
            _RENDERERS[f"workcoord.api.v1.{name}"] = renderer
        return renderer

    return register


# --- work coordinators ------------------------------------------------------------------------


@_renders("ListWorkCoordinatorsResponse")
def _coordinators(doc: dict[str, Any]) -> list[str]:
    rows = [
        [
            c.get("coordinatorId"),
            c.get("scope"),
            c.get("orgSlug"),
            c.get("displayName"),
            c.get("enabled", True),
            c.get("revision", "0"),
        ]
        for c in doc.get("workCoordinators", [])
    ]
    lines = format_table(["ID", "SCOPE", "ORG", "NAME", "ENABLED", "REVISION"], rows)
    return _with_next_page(lines, doc)


@_renders("WorkCoordinator")
def _coordinator(doc: dict[str, Any]) -> list[str]:
    capacity = doc.get("classCapacity", {})
    return [
        f"id:            {doc.get('coordinatorId', '-')}",
        f"scope:         {doc.get('scope', '-')}  org: {doc.get('orgSlug', '-')}",
        f"name:          {doc.get('displayName', '-')}",
        f"enabled:       {_cell(doc.get('enabled', True))}",
        f"capacity:      {_cell(capacity)}",
        f"digest owner:  {doc.get('digestOwner', '-')}",
        f"parent:        {doc.get('parentCoordinatorId', '-')}",
        f"revision:      {doc.get('revision', '0')}  etag: {doc.get('etag', '-')}",
    ]


# --- lanes and items --------------------------------------------------------------------------


def _item_rows(items: list[dict[str, Any]]) -> list[list[Any]]:
    return [
        [
            i.get("itemId"),
            i.get("key"),
            i.get("kind"),
            i.get("workerClass"),
            i.get("state"),
            i.get("attemptCount", 0),
            i.get("nextAction"),
        ]
        for i in items
    ]


_ITEM_HEADERS = ["ITEM", "KEY", "KIND", "CLASS", "STATE", "ATTEMPTS", "NEXT"]


@_renders("Lane")
def _lane(doc: dict[str, Any]) -> list[str]:
    lines = [
        f"lane {doc.get('laneId', '-')}  {doc.get('state', '-')}"
        f"{'  (paused)' if doc.get('paused') else ''}  → {doc.get('nextAction', '-')}",
        f"  {doc.get('title', '')}",
        "",
    ]
    return lines + format_table(_ITEM_HEADERS, _item_rows(doc.get("items", [])))


@_renders("ListLanesResponse")
def _lanes(doc: dict[str, Any]) -> list[str]:
    rows = [
        [
            lane.get("laneId"),
            lane.get("state"),
            lane.get("priority", 0),
            lane.get("nextAction"),
            lane.get("title"),
        ]
        for lane in doc.get("lanes", [])
    ]
    return _with_next_page(format_table(["LANE", "STATE", "PRIORITY", "NEXT", "TITLE"], rows), doc)


@_renders("Item")
def _item(doc: dict[str, Any]) -> list[str]:
    return format_table([*_ITEM_HEADERS, "LANE"], [[*_item_rows([doc])[0], doc.get("laneId")]])


@_renders("View")
def _view(doc: dict[str, Any]) -> list[str]:
    lines = [f"revision {doc.get('revision', '0')}", ""]
    cost = {u.get("key"): _dollars(u) for u in doc.get("laneUsage", [])}
    rows: list[list[Any]] = []
    for lane in doc.get("lanes", []):
        lane_id = lane.get("laneId")
        rows.append(
            [
                lane_id,
                lane.get("state"),
                "",
                lane.get("nextAction"),
                cost.get(lane_id, "-"),
                lane.get("title"),
            ]
        )
        for item in lane.get("items", []):
            name = item.get("key") or item.get("kind")
            rows.append(
                [
                    "  " + str(item.get("itemId")),
                    item.get("state"),
                    name,
                    item.get("nextAction"),
                    "",
                    "",
                ]
            )
    lines += format_table(["LANE / ITEM", "STATE", "KEY", "NEXT", "COST", "TITLE"], rows)
    capacity = [
        f"{c.get('workerClass')} {c.get('inUse', 0)}/{c.get('capacity', 0)}"
        for c in doc.get("capacity", [])
    ]
    lines += ["", "capacity: " + (", ".join(capacity) or "-")]
    workers = [f"{w.get('workerId')} ({w.get('workerClass')})" for w in doc.get("workers", [])]
    lines.append("workers:  " + (", ".join(workers) or "-"))
    pending = [a for a in doc.get("pendingActions", []) if a.get("state") == "OPEN"]
    escalations = [e for e in doc.get("escalations", []) if e.get("open")]
    lines.append(f"open pending actions: {len(pending)}  open escalations: {len(escalations)}")
    lines.append("spent today: " + _spend(doc.get("dayUsage")))
    return _with_next_page(lines, doc)


def _dollars(total: dict[str, Any]) -> str:
    """A usage total's cost in dollars (cost_micros are millionths of a dollar)."""
    return f"${int(total.get('costMicros', 0)) / 1_000_000:,.2f}"


def _spend(total: dict[str, Any] | None) -> str:
    """A usage total as ``$cost (N tokens)``; nothing spent when there is none."""
    if not total:
        return "$0.00 (0 tokens)"
    return f"{_dollars(total)} ({int(total.get('tokens', 0)):,} tokens)"


@_renders("Explanation")
def _explanation(doc: dict[str, Any]) -> list[str]:
    target = f"item {doc['itemId']}" if doc.get("itemId") else f"lane {doc.get('laneId', '-')}"
    lines = [f"{target}: {doc.get('state', '-')}  → {doc.get('nextAction', '-')}"]
    lines.append(
        f"spent: {_spend(doc.get('usage'))}  work coordinator today: {_spend(doc.get('dayUsage'))}"
    )
    gates = [[g.get("gate"), g.get("since"), g.get("detail")] for g in doc.get("gates", [])]
    if gates:
        lines += ["", *format_table(["GATE", "SINCE", "DETAIL"], gates)]
    attempts = [
        [
            a.get("attempt"),
            a.get("status"),
            a.get("workerId"),
            a.get("runIdentity", {}).get("agentId"),
            a.get("runIdentity", {}).get("hostname"),
            a.get("leaseId"),
        ]
        for a in doc.get("attempts", [])
    ]
    if attempts:
        headers = ["ATTEMPT", "STATUS", "WORKER", "AGENT", "HOST", "LEASE"]
        lines += ["", *format_table(headers, attempts)]
    items = [[i.get("itemId"), i.get("state"), i.get("nextAction")] for i in doc.get("items", [])]
    if items:
        lines += ["", *format_table(["ITEM", "STATE", "NEXT"], items)]
    stuck = [
        [
            f"{c['pendingAction'].get('ticket', {}).get('tracker', '')} "
            f"{c['pendingAction'].get('ticket', {}).get('key', '')}",
            c["pendingAction"].get("attempts", 0),
            c.get("trackerConnection", {}).get("trackerId", "installation"),
            c["pendingAction"].get("lastError", ""),
        ]
        for c in doc.get("stuckClosures", [])
    ]
    if stuck:
        lines += ["", *format_table(["TICKET NOT CLOSED", "ATTEMPTS", "THROUGH", "ERROR"], stuck)]
    events = doc.get("events", [])
    if events:
        lines += ["", *_event_table(events)]
    return lines


def _event_table(events: list[dict[str, Any]]) -> list[str]:
    rows = [
        [
            e.get("revision"),
            e.get("time"),
            e.get("type"),
            e.get("laneId"),
            e.get("itemId"),
            e.get("actor"),
        ]
        for e in events
    ]
    return format_table(["REV", "TIME", "TYPE", "LANE", "ITEM", "ACTOR"], rows)


@_renders("ListTrackerConnectionsResponse")
def _tracker_connections(doc: dict[str, Any]) -> list[str]:
    rows = [
        [
            c.get("trackerId"),
            c.get("tracker"),
            ",".join(c.get("projects", [])),
            c.get("credentialFingerprint"),
            c.get("lastSuccessTime", "-"),
            c.get("lastError", "") and f"{c.get('lastErrorTime', '')} {c['lastError']}",
        ]
        for c in doc.get("trackerConnections", [])
    ]
    headers = ["TRACKER", "KIND", "PROJECTS", "FINGERPRINT", "LAST SUCCESS", "LAST ERROR"]
    return _with_next_page(format_table(headers, rows), doc)


def _webhook_rows(webhooks: list[dict[str, Any]]) -> list[list[Any]]:
    return [
        [
            w.get("webhookId"),
            w.get("format", "STANDARD"),
            "yes" if w.get("enabled") else "no",
            ",".join(w.get("eventTypes", [])),
            w.get("url"),
            w.get("failingSince", "-"),
        ]
        for w in webhooks
    ]


_WEBHOOK_HEADERS = ["WEBHOOK", "FORMAT", "ENABLED", "EVENTS", "URL", "FAILING SINCE"]


@_renders("ListWebhooksResponse")
def _webhooks(doc: dict[str, Any]) -> list[str]:
    table = format_table(_WEBHOOK_HEADERS, _webhook_rows(doc.get("webhooks", [])))
    return _with_next_page(table, doc)


@_renders("CreateWebhookResponse")
def _created_webhook(doc: dict[str, Any]) -> list[str]:
    webhook = doc.get("webhook", {})
    lines = format_table(_WEBHOOK_HEADERS, _webhook_rows([webhook]))
    return [*lines, f"secret: {webhook.get('secret', '')}  (shown once: keep it now)"]


@_renders("ListDeliveriesResponse")
def _deliveries(doc: dict[str, Any]) -> list[str]:
    rows = [
        [
            d.get("deliveryId"),
            d.get("eventId"),
            d.get("eventType"),
            d.get("state"),
            d.get("attempt", 0),
            d.get("responseCode", "-"),
            d.get("nextAttemptTime", "-"),
            d.get("error", ""),
        ]
        for d in doc.get("deliveries", [])
    ]
    headers = ["DELIVERY", "EVENT", "TYPE", "STATE", "TRIES", "HTTP", "NEXT TRY", "ERROR"]
    return _with_next_page(format_table(headers, rows), doc)


@_renders("ListEventsResponse")
def _events(doc: dict[str, Any]) -> list[str]:
    return _with_next_page(_event_table(doc.get("events", [])), doc)


# --- digests and pending actions --------------------------------------------------------------


@_renders("Digest")
def _digest(doc: dict[str, Any]) -> list[str]:
    lines = [f"digest {doc.get('day', '-')} for {doc.get('owner') or '-'}"]
    entries = [
        [
            e.get("time"),
            e.get("kind"),
            e.get("laneId"),
            e.get("itemId") or e.get("actionId"),
            e.get("reason"),
        ]
        for e in doc.get("entries", [])
    ]
    if not entries:
        return [*lines, "(nothing this day)"]
    return [*lines, "", *format_table(["TIME", "KIND", "LANE", "ITEM / ACTION", "REASON"], entries)]


def _action_rows(actions: list[dict[str, Any]]) -> list[list[Any]]:
    return [
        [
            a.get("actionId"),
            a.get("state"),
            a.get("kind"),
            a.get("ticket", {}).get("key"),
            a.get("owner"),
            a.get("attempts", 0),
            a.get("lastError") or a.get("resolution"),
        ]
        for a in actions
    ]


_ACTION_HEADERS = [
    "ACTION",
    "STATE",
    "KIND",
    "TICKET",
    "OWNER",
    "ATTEMPTS",
    "LAST ERROR / RESOLUTION",
]


@_renders("ListPendingActionsResponse")
def _pending_actions(doc: dict[str, Any]) -> list[str]:
    lines = format_table(_ACTION_HEADERS, _action_rows(doc.get("pendingActions", [])))
    return _with_next_page(lines, doc)


@_renders("PendingAction")
def _pending_action(doc: dict[str, Any]) -> list[str]:
    return format_table(_ACTION_HEADERS, _action_rows([doc]))


def _with_next_page(lines: list[str], doc: dict[str, Any]) -> list[str]:
    token = doc.get("nextPageToken")
    return [*lines, f"(more: --page-token {token})"] if token else lines
