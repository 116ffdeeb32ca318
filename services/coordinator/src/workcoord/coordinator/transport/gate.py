"""The gate in front of every coordinator RPC: who is calling, and is the request well-formed.

:class:`CallGate` is the per-call check of the server's error interceptor
(:class:`workcoord.kit.status.ErrorInterceptor`), so what it refuses is answered like any other
typed error. For each call it reads the caller's credential from the metadata, authenticates it
(a bearer credential, or else a browser session, whose CSRF token a state-changing call must
carry), and only then checks the request against its field rules: an anonymous caller learns
only that a credential is needed. The method reads who called with :func:`caller`::

    p = caller().principal

The few RPCs that take no credential are listed in :data:`OPEN_METHODS`; everything else in the
v1 API, the feed's ``Watch`` and the maintenance RPCs included, is authenticated.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf.message import Message

from workcoord.api.v1 import lane_pb2, work_coordinator_pb2
from workcoord.coordinator.domain.auth import Principal
from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.domain.grants import SessionRecord
from workcoord.kit.descriptors import is_read_only
from workcoord.kit.status import CallCheck
from workcoord.kit.validation import raise_if_invalid
from workcoord.kit.wire import API_PACKAGE, CallCredentials, call_credentials

__all__ = [
    "EPOCH_CONFIRMED_BY_METHOD",
    "OPEN_METHODS",
    "CallGate",
    "Caller",
    "caller",
    "is_state_changing",
]

Context = grpc.aio.ServicerContext[Any, Any]

OPEN_METHODS: Mapping[str, str] = {
    f"/{API_PACKAGE}.SessionService/ExchangeLoginCode": "trades a one-time login code for one",
    f"/{API_PACKAGE}.SessionService/ExchangeIdToken": "trades an OpenID Connect id_token for one",
}
"""The RPCs served without a credential (they are how a browser obtains one), and why. Their
requests are still checked against the field rules."""


def _update_coordinator_rules_view(request: Message) -> Message:
    """``scope`` is required on create only (and immutable): an update body may leave it out
    (``PATCH …/{child} {"parentCoordinatorId": …}``). Fill it for the field rules only; the
    method reads the request as sent, where ``scope`` is not among the paths to change."""
    assert isinstance(request, work_coordinator_pb2.UpdateWorkCoordinatorRequest)
    if request.work_coordinator.scope:
        return request
    filled = work_coordinator_pb2.UpdateWorkCoordinatorRequest()
    filled.CopyFrom(request)
    filled.work_coordinator.scope = work_coordinator_pb2.WorkCoordinator.ORG
    return filled


def _update_lane_rules_view(request: Message) -> Message:
    """``title`` and ``template`` are required on create: an edit's body carries only what it
    changes (``PATCH …/lanes/{id} {"priority": 9}``). Fill the missing ones for the field rules
    only; the method reads the request as sent (and refuses an empty title it is to set)."""
    assert isinstance(request, lane_pb2.UpdateLaneRequest)
    if request.lane.title and request.lane.template:
        return request
    filled = lane_pb2.UpdateLaneRequest()
    filled.CopyFrom(request)
    filled.lane.title = filled.lane.title or "-"
    filled.lane.template = filled.lane.template or lane_pb2.Lane.CUSTOM
    return filled


def _batch_envelope_rules_view(request: Message) -> Message:
    """A batched worker write is checked here as an envelope only (its coordinator): each entry
    is checked by the method on its own (:mod:`.batches`), so one bad entry fails alone."""
    envelope = type(request)()
    envelope.CopyFrom(request)
    envelope.ClearField("requests")
    return envelope


EPOCH_CONFIRMED_BY_METHOD = frozenset(
    f"/{API_PACKAGE}.WorkerService/{method}" for method in ("Heartbeat", "BatchHeartbeat")
)
"""The RPCs whose cached caller is admitted without reading the credentials epoch first: the
method reads it in its own transaction (a heartbeat round reads it once for all its calls) and
confirms the caller there before writing anything, so a revoked or narrowed credential still
fails its very next call."""

_RULES_VIEWS: Mapping[str, Callable[[Message], Message]] = {
    f"/{API_PACKAGE}.WorkCoordinatorService/UpdateWorkCoordinator": _update_coordinator_rules_view,
    f"/{API_PACKAGE}.LaneService/UpdateLane": _update_lane_rules_view,
    **{
        f"/{API_PACKAGE}.WorkerService/{method}": _batch_envelope_rules_view
        for method in ("BatchHeartbeat", "BatchComplete", "BatchFail")
    },
}
"""Requests checked against the field rules in another form than they arrive in."""


@dataclass(frozen=True)
class Caller:
    """Who made the current call."""

    principal: Principal
    session: SessionRecord | None
    """The browser session the call was made with (None for a bearer credential)."""
    credentials: CallCredentials
    """What the call presented, for checks that must be repeated later (a long-lived feed)."""
    to_confirm: bool = False
    """The principal came from the cache without reading the credentials epoch (a method of
    :data:`EPOCH_CONFIRMED_BY_METHOD`): the method confirms it at the epoch it reads in its own
    transaction before it writes, or resolves its caller again."""


_current_caller: ContextVar[Caller] = ContextVar("workcoord_caller")


def caller() -> Caller:
    """The authenticated caller of the RPC being served.

    Set by :class:`CallGate` in the call's own task (grpc.aio serves each RPC in a task of its
    own), so concurrent calls never see each other's caller.
    """
    try:
        return _current_caller.get()
    except LookupError:
        raise RuntimeError(
            "no authenticated caller: the method is open or the server has no CallGate"
        ) from None


def is_state_changing(method: str) -> bool:
    """Whether the RPC ``method`` (a full gRPC method name) changes state: it is not read-only
    (:func:`workcoord.kit.descriptors.is_read_only`, its HTTP rule is not GET), so a browser
    session calls it only with its CSRF token."""
    return not is_read_only(method.lstrip("/").replace("/", "."))


class CallGate:
    """Authenticates and validates every call of the v1 API; see the module docstring."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def check_for(self, method: str) -> CallCheck | None:
        """The check of ``method`` (a full gRPC method name), looked up once per method."""
        if not method.startswith(f"/{API_PACKAGE}."):
            return None  # grpc.health.v1 and reflection answer anyone, as gRPC expects
        rules_view = _RULES_VIEWS.get(method, _as_sent)
        if method in OPEN_METHODS:
            return functools.partial(self._validate, rules_view)
        if method in EPOCH_CONFIRMED_BY_METHOD:
            # A state-changing call whose cached caller the method confirms itself.
            return functools.partial(self._admit, rules_view, True, confirmed_later=True)
        return functools.partial(self._admit, rules_view, is_state_changing(method))

    async def _validate(
        self, rules_view: Callable[[Message], Message], request: Message, context: Context
    ) -> None:
        raise_if_invalid(rules_view(request), self.engine.clock.now())

    async def _admit(
        self,
        rules_view: Callable[[Message], Message],
        state_changing: bool,
        request: Message,
        context: Context,
        *,
        confirmed_later: bool = False,
    ) -> None:
        """Authenticate the caller, check the request, and set the call's :class:`Caller`.
        ``confirmed_later``: a bearer credential whose principal is cached is admitted as
        cached, its epoch left for the method to confirm (a browser session is never cached)."""
        credentials = call_credentials(context.invocation_metadata())
        cached = None
        if confirmed_later and credentials.bearer is not None:
            cached = self.engine.credentials.unconfirmed(credentials.bearer)
        if cached is not None:
            principal, session = cached, None
        else:
            principal, session = await self.authenticate(credentials, state_changing)
        raise_if_invalid(rules_view(request), self.engine.clock.now())
        _current_caller.set(Caller(principal, session, credentials, to_confirm=cached is not None))

    async def authenticate(
        self, credentials: CallCredentials, state_changing: bool
    ) -> tuple[Principal, SessionRecord | None]:
        """The caller: the bearer credential if present, else the browser session (with its
        CSRF token when ``state_changing``); no credential at all is UNAUTHENTICATED."""
        if credentials.bearer is None and credentials.session is not None:
            found = await self.engine.sessions.authenticate_session(
                credentials.session, credentials.csrf, mutating=state_changing
            )
            return found.principal, found.session
        return await self.engine.credentials.authenticate(credentials.bearer), None


def _as_sent(request: Message) -> Message:
    return request
