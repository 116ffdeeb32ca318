"""Typed errors shared by every workcoord service.

The domain raises subclasses of :class:`WorkcoordError`; one interceptor
(:mod:`workcoord.kit.status`) turns them into ``google.rpc.Status`` and the gateway turns that
into JSON with the HTTP code of ``google/rpc/code.proto``. Each class fixes the ``reason``
(``ErrorInfo.reason``) and the status code; together they are the error contract clients
switch on.

This module is deliberately pure Python (no grpc, no protobuf): the coordinator's domain layer
imports it, and a test asserts the domain pulls in neither grpc nor sqlalchemy.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypeVar

__all__ = [
    "AlreadyExists",
    "Code",
    "CoordinationDisabled",
    "EtagMismatch",
    "FieldViolation",
    "IllegalTransition",
    "Internal",
    "InvalidArgument",
    "LeaseLost",
    "LeaseLostCause",
    "NotFound",
    "PermissionDenied",
    "PoolFull",
    "TooLarge",
    "Unauthenticated",
    "Unimplemented",
    "Violations",
    "WorkcoordError",
    "WorkerFenced",
    "error_class_for_reason",
    "http_status_for",
]

ERROR_DOMAIN = "workcoord"


class Code(enum.IntEnum):
    """Canonical status codes, numbered exactly like ``google.rpc.Code`` and ``grpc.StatusCode``."""

    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    DATA_LOSS = 15
    UNAUTHENTICATED = 16


# The HTTP mapping documented in google/rpc/code.proto (and used by grpc-gateway / Envoy).
_HTTP_STATUS: dict[Code, int] = {
    Code.OK: 200,
    Code.CANCELLED: 499,
    Code.UNKNOWN: 500,
    Code.INVALID_ARGUMENT: 400,
    Code.DEADLINE_EXCEEDED: 504,
    Code.NOT_FOUND: 404,
    Code.ALREADY_EXISTS: 409,
    Code.PERMISSION_DENIED: 403,
    Code.RESOURCE_EXHAUSTED: 429,
    Code.FAILED_PRECONDITION: 400,
    Code.ABORTED: 409,
    Code.OUT_OF_RANGE: 400,
    Code.UNIMPLEMENTED: 501,
    Code.INTERNAL: 500,
    Code.UNAVAILABLE: 503,
    Code.DATA_LOSS: 500,
    Code.UNAUTHENTICATED: 401,
}


def http_status_for(code: Code | int) -> int:
    """Return the HTTP status for a canonical code (google/rpc/code.proto); unknown codes → 500."""
    try:
        return _HTTP_STATUS[Code(code)]
    except ValueError:
        return 500


@dataclass(frozen=True, slots=True)
class FieldViolation:
    """One offending request field (``google.rpc.BadRequest.FieldViolation``).

    ``field`` is the proto field path in snake_case (``items[2].worker_class``).
    """

    field: str
    description: str


_E = TypeVar("_E", bound="WorkcoordError")


class WorkcoordError(Exception):
    """Root of every error workcoord answers to callers.

    Subclasses fix ``code``, ``reason`` (by default the code's name) and the default message in
    their class statement (``class LeaseLost(WorkcoordError, code=Code.ABORTED,
    reason="LEASE_LOST", message=…)``);
    instances carry a human-readable ``message``, ``ErrorInfo`` ``metadata`` and, for bad input,
    ``field_violations``.
    """

    code: Code = Code.UNKNOWN
    reason: str = "UNKNOWN"
    default_message: ClassVar[str] = "unknown error"

    def __init_subclass__(
        cls,
        *,
        code: Code | None = None,
        reason: str | None = None,
        message: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        if code is not None:
            cls.code = code
            cls.reason = code.name
        if reason is not None:
            cls.reason = reason
        if message is not None:
            cls.default_message = message

    def __init__(
        self,
        message: str | None = None,
        *,
        metadata: Mapping[str, str] | None = None,
        field_violations: Sequence[FieldViolation] = (),
    ) -> None:
        text = message if message else self.default_message
        super().__init__(text)
        self.message: str = text
        self.metadata: dict[str, str] = dict(metadata or {})
        self.field_violations: list[FieldViolation] = list(field_violations)

    @classmethod
    def rebuild(
        cls: type[_E],
        message: str,
        *,
        metadata: Mapping[str, str] | None = None,
        field_violations: Sequence[FieldViolation] = (),
    ) -> _E:
        """Recreate an error of this class from its wire parts, bypassing subclass constructors.

        Used by the client side to turn a received status back into a typed error.
        """
        err = cls.__new__(cls)
        WorkcoordError.__init__(err, message, metadata=metadata, field_violations=field_violations)
        return err

    def __repr__(self) -> str:
        return f"{type(self).__name__}(reason={self.reason!r}, message={self.message!r})"


class InvalidArgument(WorkcoordError, code=Code.INVALID_ARGUMENT, message="invalid argument"):
    """Bad input of any kind; names every offending field."""

    # Enough to read in a log line; the full list travels in BadRequest.
    _SUMMARY_LIMIT: ClassVar[int] = 5

    def __init__(
        self,
        violations: Sequence[FieldViolation] | FieldViolation,
        message: str | None = None,
        *,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        items = [violations] if isinstance(violations, FieldViolation) else list(violations)
        super().__init__(
            message or self.summarise(items), metadata=metadata, field_violations=items
        )

    @classmethod
    def single(cls, field: str, description: str) -> InvalidArgument:
        """Shorthand for one offending field."""
        return cls([FieldViolation(field, description)])

    @classmethod
    def summarise(cls, violations: Sequence[FieldViolation]) -> str:
        """One line naming the first few violations, e.g. ``lease_seconds must be …``."""
        if not violations:
            return cls.default_message
        shown = "; ".join(f"{v.field} {v.description}" for v in violations[: cls._SUMMARY_LIMIT])
        more = len(violations) - cls._SUMMARY_LIMIT
        suffix = f" (and {more} more)" if more > 0 else ""
        return f"invalid argument: {shown}{suffix}"


class Unauthenticated(
    WorkcoordError,
    code=Code.UNAUTHENTICATED,
    message="missing, unknown, revoked or expired credential",
):
    """Missing, unknown, revoked or expired credential."""


class PermissionDenied(WorkcoordError, code=Code.PERMISSION_DENIED, message="permission denied"):
    """Authenticated but not allowed (also: wrong tenant, where the id is the caller's own)."""


class NotFound(WorkcoordError, code=Code.NOT_FOUND, message="not found"):
    """No such resource visible to the caller (no existence oracle across tenants)."""


LeaseLostCause = Literal["expired", "superseded", "terminal", "policy"]


class LeaseLost(WorkcoordError, code=Code.ABORTED, reason="LEASE_LOST", message="lease lost"):
    """A fenced worker write touched no live lease; ``metadata["cause"]`` says why."""

    def __init__(
        self,
        cause: LeaseLostCause,
        message: str | None = None,
        *,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(
            message or f"lease lost: {cause}", metadata={**(metadata or {}), "cause": cause}
        )

    @property
    def cause(self) -> str:
        """``expired``, ``superseded``, ``terminal`` or ``policy`` (its class was disallowed)."""
        return self.metadata.get("cause", "")


class EtagMismatch(
    WorkcoordError,
    code=Code.ABORTED,
    reason="ETAG_MISMATCH",
    message="etag mismatch: the resource changed, read it again",
):
    """An update carried an etag that is no longer current."""


class AlreadyExists(WorkcoordError, code=Code.ALREADY_EXISTS, message="already exists"):
    """The resource to create already exists."""


class IllegalTransition(
    WorkcoordError,
    code=Code.FAILED_PRECONDITION,
    reason="ILLEGAL_TRANSITION",
    message="illegal transition",
):
    """The requested state change is not allowed from the current state."""


class WorkerFenced(
    WorkcoordError,
    code=Code.FAILED_PRECONDITION,
    reason="WORKER_FENCED",
    message="worker fenced: a malformed placement on one of its active attempts",
):
    """The worker is fenced (a malformed placement on one of its active attempts): it leases
    nothing until the placement is corrected or that attempt's lease expires."""


class CoordinationDisabled(
    WorkcoordError,
    code=Code.UNAVAILABLE,
    reason="COORDINATION_DISABLED",
    message="coordination is disabled",
):
    """The platform or work coordinator switch is off."""


class PoolFull(
    WorkcoordError, code=Code.RESOURCE_EXHAUSTED, reason="POOL_FULL", message="worker pool is full"
):
    """The worker pool cap is reached."""


class TooLarge(
    WorkcoordError, code=Code.RESOURCE_EXHAUSTED, reason="TOO_LARGE", message="payload too large"
):
    """A payload is over its limit."""


class Unimplemented(WorkcoordError, code=Code.UNIMPLEMENTED, message="not implemented"):
    """The method exists in the contract but is not implemented (yet)."""


class Internal(WorkcoordError, code=Code.INTERNAL, message="internal error"):
    """A bug or an unexpected failure; the message never carries internal detail."""


_BY_REASON: dict[str, type[WorkcoordError]] = {
    cls.reason: cls
    for cls in (
        InvalidArgument,
        Unauthenticated,
        PermissionDenied,
        NotFound,
        LeaseLost,
        EtagMismatch,
        AlreadyExists,
        IllegalTransition,
        WorkerFenced,
        CoordinationDisabled,
        PoolFull,
        TooLarge,
        Unimplemented,
        Internal,
    )
}

# When a status carries no (known) reason, the code alone picks the class if it is unambiguous.
_BY_CODE: dict[Code, type[WorkcoordError]] = {
    Code.INVALID_ARGUMENT: InvalidArgument,
    Code.UNAUTHENTICATED: Unauthenticated,
    Code.PERMISSION_DENIED: PermissionDenied,
    Code.NOT_FOUND: NotFound,
    Code.ALREADY_EXISTS: AlreadyExists,
    Code.UNIMPLEMENTED: Unimplemented,
    Code.INTERNAL: Internal,
}


def error_class_for_reason(reason: str) -> type[WorkcoordError] | None:
    """The error class answering ``reason`` (``ErrorInfo.reason``), if it is one of ours."""
    return _BY_REASON.get(reason)


def error_class_for_code(code: Code | int) -> type[WorkcoordError] | None:
    """The error class a bare status code unambiguously stands for, if any."""
    try:
        return _BY_CODE.get(Code(code))
    except ValueError:
        return None


def generic_error(
    code: Code | int,
    message: str,
    *,
    reason: str | None = None,
    metadata: Mapping[str, str] | None = None,
    field_violations: Sequence[FieldViolation] = (),
) -> WorkcoordError:
    """A :class:`WorkcoordError` with an arbitrary code/reason (statuses we have no class for)."""
    try:
        resolved = Code(code)
    except ValueError:
        resolved = Code.UNKNOWN
    err = WorkcoordError.rebuild(message, metadata=metadata, field_violations=field_violations)
    # Instance attributes shadow the class defaults, so the error reports what was received.
    err.code = resolved
    err.reason = reason or resolved.name
    return err


class Violations:
    """Collects field violations, then raises them all at once as :class:`InvalidArgument`.

    >>> v = Violations()
    >>> v.add("lease_seconds", "must be between 5 and 300")
    >>> v.raise_if_any()
    Traceback (most recent call last):
    ...
    workcoord.kit.errors.InvalidArgument: invalid argument: lease_seconds must be between 5 and 300
    """

    def __init__(self, prefix: str = "") -> None:
        self._prefix = prefix
        self._items: list[FieldViolation] = []

    def add(self, field: str, description: str) -> None:
        """Record that ``field`` (relative to the prefix) is bad, and why."""
        path = f"{self._prefix}.{field}" if self._prefix and field else self._prefix or field
        self._items.append(FieldViolation(path, description))

    def extend(self, violations: Iterable[FieldViolation]) -> None:
        """Record violations found elsewhere (e.g. by the descriptor-driven validator)."""
        self._items.extend(violations)

    @property
    def items(self) -> list[FieldViolation]:
        """The violations recorded so far, in order."""
        return list(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    def __iter__(self) -> Iterator[FieldViolation]:
        return iter(self._items)

    def raise_if_any(self) -> None:
        """Raise :class:`InvalidArgument` naming every recorded violation, if there is one."""
        if self._items:
            raise InvalidArgument(self._items)
