"""What every servicer of the coordinator holds: the engine.

Each RPC is a plain ``async def`` on its servicer (parse the request into the engine
command's input, call the engine, map the answer), so grep, breakpoints and stack traces land
on it.

Authentication and validation are not here: the server's :class:`~.gate.CallGate` runs them
before any method, which reads its caller with :func:`~.gate.caller`.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

from workcoord.coordinator.domain.auth import Principal
from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.domain.engine.heartbeats import Confirmation

from .gate import caller

__all__ = ["Context", "EngineServicer"]

Context = grpc.aio.ServicerContext[Any, Any]


class EngineServicer:
    """A servicer over one :class:`Engine`."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def cached_caller(self) -> Callable[[int | None], Principal | None]:
        """The current call's caller as the principal cache has it at a given credentials
        epoch (no I/O; None: ask :meth:`reauthenticator`). A browser session always asks."""
        bearer = caller().credentials.bearer
        if bearer is None:
            return lambda epoch: None
        return functools.partial(self.engine.credentials.cached_principal, bearer)

    def confirmation(self) -> Confirmation | None:
        """How a heartbeat confirms its caller, when the gate admitted it from the principal
        cache without reading the credentials epoch (``Caller.to_confirm``); else None."""
        if not caller().to_confirm:
            return None
        return Confirmation(self.cached_caller(), self.reauthenticator())

    def reauthenticator(self) -> Callable[[], Awaitable[Principal]]:
        """Resolves the current call's caller again, from the credential it presented and
        current state, as the gate did to admit it (a browser session with its CSRF token):
        for a call that waits, so what it does after the wait is done with the authority the
        caller has then, not the one it had when the call began."""
        credentials = caller().credentials
        if credentials.bearer is None and credentials.session is not None:
            session, csrf = credentials.session, credentials.csrf

            async def by_session() -> Principal:
                found = await self.engine.sessions.authenticate_session(
                    session, csrf, mutating=True
                )
                return found.principal

            return by_session
        return functools.partial(self.engine.credentials.authenticate, credentials.bearer)
