"""What every servicer of the coordinator holds: the engine and its tenancy commands.

Authentication and validation are not here: the server's :class:`~.gate.CallGate` runs them
before any method, which reads its caller with :func:`~.gate.caller`.
"""

from __future__ import annotations

from typing import Any

import grpc

from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.domain.tenancy import Tenancy

__all__ = ["Context", "EngineServicer"]

Context = grpc.aio.ServicerContext[Any, Any]


class EngineServicer:
    """A servicer over one :class:`Engine`."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.tenancy = Tenancy(engine)
