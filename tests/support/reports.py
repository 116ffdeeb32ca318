"""What workers report, as messages with every field set (found from the descriptors), for the
round trips of the stored documents: a field added to one of these messages, or renamed, is set
here without anyone writing it down, so a mapper or a document that misses it fails a test."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from google.protobuf import json_format, timestamp_pb2
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

from workcoord.api.v1 import lane_pb2
from workcoord.coordinator.domain.documents import Document
from workcoord.coordinator.domain.specs import Checkpoint, Evidence, Failure, Receipt, RunIdentity
from workcoord.coordinator.transport import mapping as m
from workcoord.kit.descriptors import descriptor_of, is_map, is_repeated

# A time with microseconds, so the written fraction has six digits.
WHEN = datetime(2026, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)


def every_field_set(message: type[Message]) -> Message:
    """A ``message`` with every field at a value other than its default: text named after the
    field, 7 for numbers, true, the last enum value, two entries of each repeated field, a
    timestamp with microseconds, nested messages filled the same way."""
    out = message()
    for field in descriptor_of(out).fields:
        if is_map(field):
            getattr(out, field.name)[f"{field.name}-key"] = f"{field.name}-value"
        elif is_repeated(field):
            getattr(out, field.name).extend([_value(field, n) for n in (1, 2)])
        elif field.message_type is not None:
            getattr(out, field.name).CopyFrom(_value(field, 1))
        else:
            setattr(out, field.name, _value(field, 1))
    return out


def _value(field: FieldDescriptor, n: int) -> Any:
    if field.message_type is not None:
        if field.message_type.full_name == "google.protobuf.Timestamp":
            stamp = timestamp_pb2.Timestamp()
            stamp.FromDatetime(WHEN)
            return stamp
        return every_field_set(GetMessageClass(field.message_type))
    if field.enum_type is not None:
        return field.enum_type.values[-1].number
    if field.type == FieldDescriptor.TYPE_BOOL:
        return True
    if field.type == FieldDescriptor.TYPE_STRING:
        return f"{field.name}-{n}"
    return 7 * n


def proto_json(message: Message) -> dict[str, Any]:
    """What the proto's own JSON mapping writes, with proto field names."""
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


@dataclass(frozen=True)
class StoredReport:
    """One kind of stored report: its message, its document and the mappers between them."""

    message: type[Message]
    document: type[Document]
    from_pb: Callable[[Any], Document]
    to_pb: Callable[[Any], Message | None]


REPORTS = {
    "run_identity": StoredReport(
        lane_pb2.RunIdentity, RunIdentity, m.run_identity_from_pb, m.run_identity_to_pb
    ),
    "evidence": StoredReport(lane_pb2.Evidence, Evidence, m.evidence_from_pb, m.evidence_to_pb),
    "receipt": StoredReport(lane_pb2.Receipt, Receipt, m.receipt_from_pb, m.receipt_to_pb),
    "checkpoint": StoredReport(
        lane_pb2.Checkpoint, Checkpoint, m.checkpoint_from_pb, m.checkpoint_to_pb
    ),
    "failure": StoredReport(lane_pb2.ErrorInfo, Failure, m.failure_from_pb, m.failure_to_pb),
}


# The documents exactly as release 0.1 stored them (written by its code, captured before the
# readers became strict), by the column that holds them.
RELEASE_0_1 = Path(__file__).with_name("stored_documents_0.1.json")


def release_0_1_documents() -> dict[str, list[dict[str, Any]]]:
    documents: dict[str, list[dict[str, Any]]] = json.loads(RELEASE_0_1.read_text("utf-8"))
    return documents
