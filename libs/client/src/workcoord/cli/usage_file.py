"""The usage file of ``worker run``: where the command reports what its attempt spent.

The command may write ``$WORKCOORD_USAGE_FILE`` at any time: proto3 JSON of ``Usage``, the
attempt's running totals (``{"inputTokens": "1200", "costMicros": "400000", "model": "…"}``).
The supervisor reads it before each heartbeat and before the final write and passes it on. A
file that is missing, too large, malformed, out of the API's bounds or lower than the totals
already passed on is skipped (the last good totals stand), so a command writing the file
half-way never costs it its lease.
"""

from __future__ import annotations

from pathlib import Path

from google.protobuf import json_format

from workcoord.api.v1 import lane_pb2
from workcoord.kit.validation import validate

__all__ = ["USAGE_MAX_FILE_BYTES", "UsageFile"]

USAGE_MAX_FILE_BYTES = 4096
_TOTALS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cost_micros",
)


class UsageFile:
    """One attempt's usage file and the last good totals read from it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.last: lane_pb2.Usage | None = None

    def read(self) -> lane_pb2.Usage | None:
        """The totals the file holds now if they are good and not lower than the last ones;
        else the last good totals (None before any)."""
        usage = _parse(self.path)
        if usage is not None and not _lower(usage, self.last):
            self.last = usage
        return self.last


def _parse(path: Path) -> lane_pb2.Usage | None:
    try:
        if path.stat().st_size > USAGE_MAX_FILE_BYTES:
            return None
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if not text.strip():
        return None
    usage = lane_pb2.Usage()
    try:
        json_format.Parse(text, usage)
    except json_format.ParseError:
        return None
    return None if validate(usage) else usage


def _lower(usage: lane_pb2.Usage, last: lane_pb2.Usage | None) -> bool:
    if last is None:
        return False
    return any(getattr(usage, name) < getattr(last, name) for name in _TOTALS)
