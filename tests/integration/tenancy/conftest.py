"""Tenancy tests create the installation's one GLOBAL work coordinator and flip the platform
switch: installation-wide state, so every test here runs on a database of its own."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.support.harness import Stack, start_gateway_for
from workcoord.gateway.server import RunningGateway


@pytest.fixture
async def stack(isolated_stack: Stack) -> Stack:
    return isolated_stack


@pytest.fixture
def gateway_settings() -> dict[str, Any]:
    """Extra ``GatewaySettings`` fields of ``gateway`` (a module overrides this fixture)."""
    return {}


@pytest.fixture
async def gateway(stack: Stack, gateway_settings: dict[str, Any]) -> AsyncIterator[RunningGateway]:
    """A gateway in front of the stack's coordinator."""
    running = await start_gateway_for(stack.address, **gateway_settings)
    yield running
    await running.stop()
