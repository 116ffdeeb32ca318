"""What workers report, as messages with every field set (found from the descriptors), for the
round trips of the stored documents: a field added to one of these messages, or renamed, is set
here without anyone writing it down, so a mapper or a document that misses it fails a test."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from google.protobuf import json_format, timestamp_pb2
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

from workcoord.api.v1 import lane_pb2, policy_pb2
from workcoord.coordinator.domain import rules
from workcoord.coordinator.domain.documents import Document
from workcoord.coordinator.domain.engine.fences import fence_for
from workcoord.coordinator.domain.model import Attempt, AttemptStatus, Item, ItemKind, ItemState
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


# The column each report is stored in (a failure in two).
COLUMNS: dict[str, str] = {
    "attempts.run_identity": "run_identity",
    "attempts.error": "failure",
    "attempts.checkpoint": "checkpoint",
    "items.evidence": "evidence",
    "items.last_error": "failure",
    "lanes.receipt": "receipt",
}

# What each release stored, by column, written by that release's code: 0.1's was captured
# before the readers became strict. At a release, save what it writes as its own file
# (``uv run python -m tests.support.reports > tests/support/stored_documents_<release>.json``)
# and add it here, last: it becomes the previous release the next one is checked against.
RELEASES = ("0.1",)


def stored_documents(release: str) -> dict[str, list[dict[str, Any]]]:
    path = Path(__file__).with_name(f"stored_documents_{release}.json")
    documents: dict[str, list[dict[str, Any]]] = json.loads(path.read_text("utf-8"))
    return documents


def release_0_1_documents() -> dict[str, list[dict[str, Any]]]:
    return stored_documents("0.1")


def current_documents() -> dict[str, list[dict[str, Any]]]:
    """What this release stores, by column: each report, placement and fence with every field
    set, and the forms written otherwise (an attempt the coordinator ended: only its cause; a
    lane's receipt before it shipped: empty)."""
    out: dict[str, list[dict[str, Any]]] = {
        column: [REPORTS[kind].from_pb(every_field_set(REPORTS[kind].message)).to_json()]
        for column, kind in COLUMNS.items()
    }
    out["attempts.error"].append(Failure(cause=rules.POLICY_CAUSE).to_json())
    out["lanes.receipt"].append({})
    out["placement"] = [m.to_dict(every_field_set(policy_pb2.Placement))]
    out["workers.fence"] = [_fence()]
    return out


def _fence() -> dict[str, Any]:
    held = Item(
        item_id="it_1",
        coordinator_id="wc_a",
        lane_id="ln_1",
        key="held",
        kind=ItemKind.TASK,
        worker_class="codex",
        state=ItemState.LEASED,
        create_time=WHEN,
        update_time=WHEN,
        placement={"worker_id": "w1", "bogus": 1},
    )
    lease = Attempt(
        lease_id="ls_1",
        coordinator_id="wc_a",
        item_id="it_1",
        lane_id="ln_1",
        attempt=1,
        status=AttemptStatus.LEASED,
        token_hash="0" * 64,
        worker_id="w1",
        worker_class="codex",
        principal="key_fleet",
        lease_seconds=60,
        lease_expire_time=WHEN + timedelta(seconds=60),
        create_time=WHEN,
        exclusive_key="resource:gpu-0",
    )
    fence = fence_for([lease], {"it_1": held}, WHEN)
    assert fence is not None
    return fence


if __name__ == "__main__":
    print(json.dumps(current_documents(), indent=2, sort_keys=True))
