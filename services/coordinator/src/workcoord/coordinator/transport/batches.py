"""The envelope and the entries of a batched worker write (``BatchHeartbeat``,
``BatchComplete``, ``BatchFail``).

The gate checks only the envelope's coordinator (see ``gate._batch_envelope_rules_view``);
here the envelope is checked as a whole (1 to 500 entries, distinct lease ids: otherwise
INVALID_ARGUMENT for the call, nothing written) and each entry against the field rules of its
single call, on its own: an entry that fails them is answered with its error and never reaches
the engine. Entries may leave their coordinator out; one that names another is refused alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar, cast

from google.protobuf.message import Message
from google.rpc import code_pb2, status_pb2

from workcoord.coordinator.domain.inputs import OnLeaseInput
from workcoord.coordinator.domain.results import EntryResult
from workcoord.kit.errors import FieldViolation, InvalidArgument, WorkcoordError
from workcoord.kit.status import to_rpc_status
from workcoord.kit.validation import validate

__all__ = ["MAX_ENTRIES", "Entries", "ok_status", "read_entries", "status_of"]

MAX_ENTRIES = 500


_R = TypeVar("_R", bound=Message)
_I = TypeVar("_I", bound=OnLeaseInput)
_V = TypeVar("_V")


@dataclass(slots=True)
class Entries(Generic[_I]):
    """The entries of a batch: the inputs that passed their checks (for the engine) and the
    refusals of the others, by position."""

    inputs: list[_I]
    refused: dict[int, WorkcoordError]
    lease_ids: list[str]

    def merge(self, answered: Sequence[EntryResult[_V]]) -> list[EntryResult[_V]]:
        """The engine's answers to ``inputs`` and the refusals, back in request order."""
        applied = iter(answered)
        return [
            EntryResult(lease_id, error=self.refused[at]) if at in self.refused else next(applied)
            for at, lease_id in enumerate(self.lease_ids)
        ]


def read_entries(
    coordinator_id: str,
    requests: Sequence[_R],
    to_input: Callable[[_R], _I],
    now: datetime,
) -> Entries[_I]:
    """Check the envelope (INVALID_ARGUMENT for the call) and each entry (refused alone)."""
    if not requests:
        raise InvalidArgument([FieldViolation("requests", "at least one entry is required")])
    if len(requests) > MAX_ENTRIES:
        raise InvalidArgument(
            [FieldViolation("requests", f"at most {MAX_ENTRIES} entries per call")]
        )
    lease_ids = [_lease_id(r) for r in requests]
    seen: set[str] = set()
    for at, lease_id in enumerate(lease_ids):
        if lease_id in seen:
            raise InvalidArgument(
                [FieldViolation(f"requests[{at}].lease_id", f"lease {lease_id} is repeated")]
            )
        seen.add(lease_id)
    entries: Entries[_I] = Entries([], {}, lease_ids)
    for at, request in enumerate(requests):
        entry: Message = request
        if _coordinator_of(request) != coordinator_id:
            if _coordinator_of(request):
                entries.refused[at] = InvalidArgument(
                    [FieldViolation("coordinator_id", "must be the batch's coordinator")]
                )
                continue
            entry = type(request)()
            entry.CopyFrom(request)
            entry.coordinator_id = coordinator_id  # type: ignore[attr-defined]
        violations = validate(entry, now)
        if violations:
            entries.refused[at] = InvalidArgument(violations)
            continue
        try:
            entries.inputs.append(to_input(entry))  # type: ignore[arg-type]
        except WorkcoordError as exc:
            entries.refused[at] = exc
    return entries


def _lease_id(request: Message) -> str:
    lease_id: str = cast(Any, request).lease_id
    return lease_id


def _coordinator_of(request: Message) -> str:
    coordinator_id: str = cast(Any, request).coordinator_id
    return coordinator_id


def ok_status() -> status_pb2.Status:
    """The status of an entry that applied."""
    return status_pb2.Status(code=code_pb2.OK)


def status_of(result: EntryResult[Any]) -> status_pb2.Status:
    """The status of one entry's answer: OK, or its error as the single call would send it."""
    return ok_status() if result.error is None else to_rpc_status(result.error)
