"""What every servicer of the coordinator holds: the engine and its tenancy commands.

Each RPC is a plain ``async def`` on its servicer (parse the request into the engine
command's input, call the engine, map the answer), so grep, breakpoints and stack traces land
on it. :func:`rpc`, which writes such a method from two lambdas, is left only for the
``AdminService`` methods not yet written out; add no new use.

Authentication and validation are not here: the server's :class:`~.gate.CallGate` runs them
before any method, which reads its caller with :func:`~.gate.caller`.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol, TypeVar, cast

import grpc

from workcoord.coordinator.domain.auth import Principal
from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.domain.tenancy import Tenancy

from .gate import caller

__all__ = ["Context", "EngineServicer", "Rpc", "rpc"]

Context = grpc.aio.ServicerContext[Any, Any]

_Request = TypeVar("_Request")
_Response = TypeVar("_Response")
_Answer = TypeVar("_Answer")
_RequestIn = TypeVar("_RequestIn", contravariant=True)
_ResponseOut = TypeVar("_ResponseOut", covariant=True)


class EngineServicer:
    """A servicer over one :class:`Engine`."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.tenancy = Tenancy(engine)

    def reauthenticator(self) -> Callable[[], Awaitable[Principal]]:
        """Resolves the current call's caller again, from the credential it presented and
        current state, as the gate did to admit it (a browser session with its CSRF token):
        for a call that waits, so what it does after the wait is done with the authority the
        caller has then, not the one it had when the call began."""
        credentials = caller().credentials
        if credentials.bearer is None and credentials.session is not None:
            session, csrf = credentials.session, credentials.csrf

            async def by_session() -> Principal:
                found = await self.tenancy.authenticate_session(session, csrf, mutating=True)
                return found.principal

            return by_session
        return functools.partial(self.engine.authenticate, credentials.bearer)


class Rpc(Protocol[_RequestIn, _ResponseOut]):
    """A servicer method as the generated servicer base declares it, read from a servicer."""

    def __call__(
        self, request: _RequestIn, context: Context
    ) -> Coroutine[Any, Any, _ResponseOut]: ...


def rpc(
    request_type: type[_Request],
    call: Callable[[EngineServicer, Principal, _Request], Awaitable[_Answer]],
    respond: Callable[[_Answer], _Response],
) -> Rpc[_Request, _Response]:
    """The servicer method, assigned as a class attribute under the RPC's name, that awaits
    ``call(servicer, principal, request)`` for the caller's principal and returns
    ``respond(answer)``. ``request_type`` names the request ``call`` reads."""

    async def method(self: EngineServicer, request: _Request, context: Context) -> _Response:
        return respond(await call(self, caller().principal, request))

    # In a class body the function becomes a method: read from a servicer, it is an Rpc.
    return cast("Rpc[_Request, _Response]", method)
