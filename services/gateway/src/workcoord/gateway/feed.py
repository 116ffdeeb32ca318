"""The WebSocket feed's frames: each ``WatchResponse`` as one JSON text,
``{"type": <the frame's name>, …the frame in proto3 JSON}``, e.g. ``{"type": "delta",
"fromRevision": "8", "toRevision": "9", "events": [...]}``.

Every subscriber of a work coordinator receives the same frames, so the JSON of a frame is kept
for a moment, keyed by its deterministic wire bytes: N subscribers on one gateway cost one
conversion per frame, not N.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

from google.protobuf import json_format
from google.protobuf import message as _message

__all__ = ["frame_json"]

# Larger frames are still sent (a snapshot is as big as the view), but not remembered.
_CACHE_ENTRIES = 256
_CACHE_MAX_BYTES = 256 * 1024

_cache: OrderedDict[bytes, str] = OrderedDict()


def frame_json(frame: _message.Message) -> str:
    """One feed frame as the JSON text the WebSocket sends."""
    key = frame.SerializeToString(deterministic=True)
    cached = _cache.get(key)
    if cached is not None:
        _cache.move_to_end(key)
        return cached
    text = _to_json(frame)
    if len(key) <= _CACHE_MAX_BYTES:
        _cache[key] = text
        if len(_cache) > _CACHE_ENTRIES:
            _cache.popitem(last=False)
    return text


def _to_json(frame: _message.Message) -> str:
    descriptor = frame.DESCRIPTOR
    for oneof in descriptor.oneofs:
        name = frame.WhichOneof(oneof.name)
        if name is not None:
            field = descriptor.fields_by_name[name]
            inner = getattr(frame, name)
            body: dict[str, Any] = (
                json_format.MessageToDict(inner) if field.message_type is not None else {}
            )
            return json.dumps({"type": name, **body}, ensure_ascii=False)
    return json.dumps(json_format.MessageToDict(frame), ensure_ascii=False)
