"""Fixtures of the recovery tests: a fake coordinator on a real gRPC port."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import grpc.aio
import pytest

from workcoord.api.v1 import maintenance_pb2_grpc
from workcoord.kit.clock import ManualClock

from .fakes import FakeCoordinator, FakeCoordinatorState

if TYPE_CHECKING:
    from workcoord.api.v1.maintenance_pb2_grpc import MaintenanceServiceAsyncStub


@pytest.fixture
def state(clock: ManualClock) -> FakeCoordinatorState:
    return FakeCoordinatorState(clock=clock, targets=["alpha", "beta", "gamma"])


@pytest.fixture
async def coordinator(state: FakeCoordinatorState) -> AsyncIterator[FakeCoordinator]:
    fake = FakeCoordinator(state)
    await fake.start()
    yield fake
    await fake.stop()


@pytest.fixture
async def channel(coordinator: FakeCoordinator) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(coordinator.address) as chan:
        yield chan


@pytest.fixture
def maintenance(channel: grpc.aio.Channel) -> MaintenanceServiceAsyncStub:
    return maintenance_pb2_grpc.MaintenanceServiceStub(channel)
