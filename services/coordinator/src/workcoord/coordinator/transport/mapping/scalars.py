"""Timestamps, durations, JSON, enums, pages and retry/review/placement policies between
protobuf and the domain."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar, overload

from google.protobuf import duration_pb2, json_format, struct_pb2, timestamp_pb2
from google.protobuf.message import Message

from workcoord.api.v1 import policy_pb2
from workcoord.coordinator.domain import rules
from workcoord.coordinator.domain.documents import UnreadableDocument
from workcoord.coordinator.domain.model import (
    JsonObject,
    OnPass,
    RetryPolicy,
    ReviewPolicy,
)
from workcoord.coordinator.domain.results import Page

_Response = TypeVar("_Response", bound=Message)
_Record = TypeVar("_Record")
_Enum = TypeVar("_Enum", bound=enum.Enum)


class _ProtoEnum(Protocol):
    """A generated proto enum (``lane_pb2.Lane.State``): it names its values."""

    def Name(self, number: int) -> str: ...


def enum_from_pb(proto_enum: _ProtoEnum, number: int, kind: type[_Enum]) -> _Enum | None:
    """The member of ``kind`` named like the value ``number`` of ``proto_enum``; None for its
    zero value (``…_UNSPECIFIED``: not given)."""
    return None if number == 0 else kind(proto_enum.Name(number))


@overload
def ts(value: datetime) -> timestamp_pb2.Timestamp: ...
@overload
def ts(value: None) -> None: ...
@overload
def ts(value: datetime | None) -> timestamp_pb2.Timestamp | None: ...


def ts(value: datetime | None) -> timestamp_pb2.Timestamp | None:
    if value is None:
        return None
    seconds, nanos = _since_epoch(value)
    return timestamp_pb2.Timestamp(seconds=seconds, nanos=nanos)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _since_epoch(value: datetime) -> tuple[int, int]:
    """A timestamp's (seconds, nanos) of ``value``: whole seconds since the epoch (rounded
    down) and the nanoseconds past them, as ``Timestamp.FromDatetime`` sets them, by date
    arithmetic (every answer carries several times; ``FromDatetime`` is pure Python and some
    times slower). A naive value is taken as local time (``astimezone``'s reading)."""
    since = (value if value.tzinfo is not None else value.astimezone(UTC)) - _EPOCH
    return since.days * 86_400 + since.seconds, since.microseconds * 1_000


def set_time(message: Message, name: str, value: datetime | None) -> None:
    """Set the timestamp field ``name`` of ``message`` to ``value``, unless it is None: in
    place, without a timestamp message of its own to copy (what ``set_message(message, name,
    ts(value))`` does)."""
    if value is not None:
        seconds, nanos = _since_epoch(value)
        field = getattr(message, name)
        field.seconds = seconds
        field.nanos = nanos
        field.SetInParent()


def from_ts(value: timestamp_pb2.Timestamp) -> datetime:
    return value.ToDatetime(tzinfo=UTC)


def from_optional_ts(message: Message, field: str) -> datetime | None:
    """The timestamp ``field`` of ``message`` as a datetime, or None when it is unset."""
    return from_ts(getattr(message, field)) if message.HasField(field) else None


def dur(seconds: float) -> duration_pb2.Duration:
    out = duration_pb2.Duration()
    out.FromNanoseconds(round(seconds * 1e9))
    return out


def to_dict(message: Message) -> JsonObject:
    """A message as proto3 JSON with proto field names (how a placement is stored)."""
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def from_dict(data: Mapping[str, Any] | None, message: Message) -> Message:
    """Parse stored proto3 JSON ``data`` into ``message``, strictly: a field the message does
    not have, or a value that does not fit, raises :class:`UnreadableDocument` (never dropped).
    Nothing when ``data`` is None or empty (so a message field passed as ``message`` stays
    unset)."""
    if data:
        try:
            json_format.ParseDict(dict(data), message, ignore_unknown_fields=False)
        except json_format.ParseError as exc:
            kind = message.DESCRIPTOR.name
            raise UnreadableDocument(kind, "(document)", str(exc)) from exc
    return message


def struct(data: Mapping[str, Any] | None) -> struct_pb2.Struct:
    out = struct_pb2.Struct()
    if data:
        out.update(dict(data))
    return out


def set_message(message: Message, name: str, value: Message | None) -> None:
    """Set the message field `name` of `message` to a copy of `value`, unless it is None."""
    if value is not None:
        getattr(message, name).CopyFrom(value)


def page_to_pb(
    response: type[_Response],
    field: str,
    page: Page[_Record],
    to_pb: Callable[[_Record], Message],
) -> _Response:
    """A ``List…`` response: the page's records, mapped by ``to_pb``, in ``field``, and the token
    of the next page."""
    return response(
        **{field: [to_pb(record) for record in page.items]},
        next_page_token=page.next_page_token,
    )


# ------------------------------------------------------------------ policies


def placement_to_pb(placement: JsonObject | None, out: policy_pb2.Placement) -> None:
    """Fill ``out`` with a stored placement (written by the proto's own JSON mapping).

    A well-formed placement is read strictly (:func:`from_dict`). One the rules find malformed
    (stored by an older release, or edited by hand) is handled explicitly rather than refused:
    its item is held back with a PLACEMENT gate naming the problems and a worker holding it is
    fenced (``rules.placement_problems``); it is shown with its fields that still read, so the
    item stays readable while someone corrects it. The stored value is never changed here."""
    if not placement:
        return
    if not rules.placement_problems(placement):
        from_dict(placement, out)
        return
    for name, value in placement.items():
        if name not in rules.PLACEMENT_FIELDS:
            continue
        part = policy_pb2.Placement()
        try:
            json_format.ParseDict({name: value}, part)
        except json_format.ParseError:
            continue  # the gate and the fence name it
        out.MergeFrom(part)


def retry_from_pb(policy: policy_pb2.RetryPolicy) -> RetryPolicy:
    return RetryPolicy(
        initial_interval=policy.initial_interval.ToTimedelta().total_seconds()
        if policy.HasField("initial_interval")
        else None,
        backoff_coefficient=policy.backoff_coefficient or None,
        maximum_interval=policy.maximum_interval.ToTimedelta().total_seconds()
        if policy.HasField("maximum_interval")
        else None,
        maximum_attempts=policy.maximum_attempts or None,
    )


def retry_to_pb(policy: RetryPolicy) -> policy_pb2.RetryPolicy:
    out = policy_pb2.RetryPolicy(
        backoff_coefficient=policy.backoff_coefficient or 0.0,
        maximum_attempts=policy.maximum_attempts or 0,
    )
    if policy.initial_interval is not None:
        out.initial_interval.CopyFrom(dur(policy.initial_interval))
    if policy.maximum_interval is not None:
        out.maximum_interval.CopyFrom(dur(policy.maximum_interval))
    return out


def review_from_pb(policy: policy_pb2.ReviewPolicy) -> ReviewPolicy:
    return ReviewPolicy(
        max_fail_rounds=policy.max_fail_rounds or None,
        on_pass=enum_from_pb(policy_pb2.ReviewPolicy.OnPass, policy.on_pass, OnPass),
        ship_requires_approval=policy.ship_requires_approval
        if policy.HasField("ship_requires_approval")
        else None,
    )


def review_to_pb(policy: ReviewPolicy) -> policy_pb2.ReviewPolicy:
    out = policy_pb2.ReviewPolicy(
        max_fail_rounds=policy.max_fail_rounds or 0,
        on_pass=policy.on_pass.value if policy.on_pass is not None else None,
    )
    if policy.ship_requires_approval is not None:
        out.ship_requires_approval = policy.ship_requires_approval
    return out
