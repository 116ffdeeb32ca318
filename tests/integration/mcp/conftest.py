"""Fixtures of the MCP tests: a coordinator on the real PostgreSQL + Redis behind two gateways.

Two gateways on one coordinator are two replicas: the HTTP agents of :mod:`.agents` send each
request to the next one, so every test also proves the gateway keeps no MCP session state.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.harness import Stack
from tests.support.mcp_agents import Agent, agent
from workcoord.gateway.server import RunningGateway, start_gateway
from workcoord.kit.settings import GatewaySettings


@pytest.fixture
def backend() -> str:
    """MCP runs against the real PostgreSQL + Redis (the SQLite path has its own contract
    tests; the tools add nothing backend-specific)."""
    return "postgres"


@dataclass
class McpWorld:
    """The stack, its two gateways (``host:port``) and where ``workcoord mcp`` logs go."""

    stack: Stack
    gateways: list[str]
    stderr_log: Path

    def agent(self, transport: str, token: str | None = None) -> AbstractAsyncContextManager[Agent]:
        """An agent over ``transport`` holding ``token`` (default: the stack's full work key)."""
        return agent(
            transport,
            self.gateways,
            self.stack.address,
            token if token is not None else self.stack.key_secret,
            self.stderr_log,
        )


@pytest.fixture
async def world(stack: Stack, tmp_path: Path) -> AsyncIterator[McpWorld]:
    running: list[RunningGateway] = []
    try:
        for _ in range(2):
            settings = GatewaySettings(
                listen_gateway="127.0.0.1:0",
                coordinator_address=stack.address,
                recovery_address=stack.address,
            )
            running.append(await start_gateway(settings))
        yield McpWorld(stack, [gateway.address for gateway in running], tmp_path / "mcp.log")
    finally:
        for gateway in running:
            await gateway.stop()
