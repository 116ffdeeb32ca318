"""The recovery gRPC service end to end: start_recovery against the fake coordinator."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import grpc
import grpc.aio
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from pydantic import SecretStr

from workcoord.api.v1 import recovery_pb2, recovery_pb2_grpc
from workcoord.kit.errors import FieldViolation, InvalidArgument, PermissionDenied
from workcoord.kit.settings import RecoverySettings, SettingsError
from workcoord.kit.status import error_from_rpc
from workcoord.recovery import RunningRecovery, start_recovery

from .fakes import (
    ADMIN_TOKEN,
    ORG_ADMIN_TOKEN,
    SERVICE_KEY,
    WORK_KEY,
    FakeCoordinator,
    FakeCoordinatorState,
)

if TYPE_CHECKING:
    from workcoord.api.v1.recovery_pb2_grpc import RecoveryServiceAsyncStub


def _settings(coordinator_address: str, service_key: str | None = SERVICE_KEY) -> RecoverySettings:
    return RecoverySettings(
        listen_recovery="127.0.0.1:0",
        coordinator_address=coordinator_address,
        service_key=SecretStr(service_key) if service_key is not None else None,
        recovery_interval_seconds=15.0,
    )


def _in_pass_loop() -> bool:
    """Whether the caller is the recovery loop's pass task (not its leadership task)."""
    task = asyncio.current_task()
    return task is not None and task.get_name() == "workcoord-recovery-passes"


@pytest.fixture
async def recovery(
    coordinator: FakeCoordinator, state: FakeCoordinatorState
) -> AsyncIterator[RunningRecovery]:
    first_tick_done = asyncio.Event()
    forever = asyncio.Event()

    async def sleep_after_first_tick(seconds: float) -> None:
        if _in_pass_loop():
            first_tick_done.set()
        await forever.wait()  # one leadership attempt and one pass only; tests drive the rest

    running = await start_recovery(
        _settings(coordinator.address), clock=state.clock, sleep=sleep_after_first_tick
    )
    await asyncio.wait_for(first_tick_done.wait(), timeout=10)
    yield running
    await running.stop()


@pytest.fixture
async def stub(recovery: RunningRecovery) -> AsyncIterator[RecoveryServiceAsyncStub]:
    async with grpc.aio.insecure_channel(recovery.address) as channel:
        yield recovery_pb2_grpc.RecoveryServiceStub(channel)


def _auth(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


async def test_serves_health_and_binds_a_real_port(recovery: RunningRecovery) -> None:
    assert not recovery.address.endswith(":0")
    async with grpc.aio.insecure_channel(recovery.address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        answer = await health.Check(
            health_pb2.HealthCheckRequest(service="workcoord.api.v1.RecoveryService")
        )
    assert answer.status == health_pb2.HealthCheckResponse.SERVING


async def test_background_loop_runs_a_pass_and_stop_releases_leadership(
    coordinator: FakeCoordinator, state: FakeCoordinatorState
) -> None:
    ticked = asyncio.Event()

    async def sleep(seconds: float) -> None:
        if _in_pass_loop():
            ticked.set()
        await asyncio.Event().wait()

    running = await start_recovery(_settings(coordinator.address), clock=state.clock, sleep=sleep)
    await asyncio.wait_for(ticked.wait(), timeout=10)
    assert [c for c, _ in state.runs] == ["alpha", "beta", "gamma"]
    assert running.recoverer.leader
    await running.stop()
    await running.stop()  # idempotent
    assert state.release_calls == [running.recoverer.replica_id]


async def test_start_requires_a_service_key(coordinator: FakeCoordinator) -> None:
    with pytest.raises(SettingsError, match="WORKCOORD_SERVICE_KEY"):
        await start_recovery(_settings(coordinator.address, service_key=None))


async def test_maintain_forwards_the_callers_credential(
    stub: RecoveryServiceAsyncStub, state: FakeCoordinatorState
) -> None:
    response = await stub.Maintain(
        recovery_pb2.MaintainRequest(coordinator_id="beta"), metadata=_auth(ORG_ADMIN_TOKEN)
    )
    assert response.report.coordinator_id == "beta"
    assert state.runs[-1] == ("beta", f"Bearer {ORG_ADMIN_TOKEN}")


async def test_a_browser_session_is_forwarded_with_its_csrf_token(
    stub: RecoveryServiceAsyncStub, state: FakeCoordinatorState
) -> None:
    # What the gateway sends for a signed-in browser: the session and its CSRF token.
    browser = (("x-workcoord-session", ADMIN_TOKEN), ("x-workcoord-csrf", "csrf-1"))
    await stub.Maintain(recovery_pb2.MaintainRequest(coordinator_id="beta"), metadata=browser)
    assert state.forwarded[-1] == {"x-workcoord-session": ADMIN_TOKEN, "x-workcoord-csrf": "csrf-1"}
    status = await stub.GetRecoveryStatus(
        recovery_pb2.GetRecoveryStatusRequest(), metadata=browser[:1]
    )
    assert status.status.leader
    # A bearer credential wins over a session: only the bearer is forwarded.
    await stub.Maintain(
        recovery_pb2.MaintainRequest(coordinator_id="beta"),
        metadata=(*_auth(ORG_ADMIN_TOKEN), *browser),
    )
    assert state.forwarded[-1] == {"authorization": f"Bearer {ORG_ADMIN_TOKEN}"}


async def test_maintain_records_the_pass_in_status(
    stub: RecoveryServiceAsyncStub, state: FakeCoordinatorState
) -> None:
    state.clock.advance(60)
    await stub.Maintain(
        recovery_pb2.MaintainRequest(coordinator_id="gamma"), metadata=_auth(ADMIN_TOKEN)
    )
    status = (
        await stub.GetRecoveryStatus(
            recovery_pb2.GetRecoveryStatusRequest(), metadata=_auth(ADMIN_TOKEN)
        )
    ).status
    gamma = next(c for c in status.coordinators if c.coordinator_id == "gamma")
    assert gamma.pass_time.ToDatetime(tzinfo=state.clock.now().tzinfo) == state.clock.now()


async def test_maintain_without_credential_is_unauthenticated(
    stub: RecoveryServiceAsyncStub, state: FakeCoordinatorState
) -> None:
    runs_before = len(state.runs)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.Maintain(recovery_pb2.MaintainRequest(coordinator_id="alpha"))
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert error_from_rpc(caught.value).reason == "UNAUTHENTICATED"
    assert len(state.runs) == runs_before


async def test_maintain_returns_upstream_errors_unchanged(
    stub: RecoveryServiceAsyncStub, state: FakeCoordinatorState
) -> None:
    state.failures["alpha"] = InvalidArgument([FieldViolation("batch_size", "too big")])
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.Maintain(
            recovery_pb2.MaintainRequest(coordinator_id="alpha"), metadata=_auth(ADMIN_TOKEN)
        )
    err = error_from_rpc(caught.value)
    assert isinstance(err, InvalidArgument)
    assert err.field_violations == [FieldViolation("batch_size", "too big")]

    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.Maintain(
            recovery_pb2.MaintainRequest(coordinator_id="alpha"), metadata=_auth(WORK_KEY)
        )
    assert caught.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert isinstance(error_from_rpc(caught.value), PermissionDenied)

    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.Maintain(
            recovery_pb2.MaintainRequest(coordinator_id="alpha"), metadata=_auth("wck_unknown")
        )
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert caught.value.details() == "unknown credential"


@pytest.mark.parametrize("token", [ADMIN_TOKEN, SERVICE_KEY])
async def test_status_for_platform_admins_and_the_service(
    stub: RecoveryServiceAsyncStub, recovery: RunningRecovery, token: str
) -> None:
    response = await stub.GetRecoveryStatus(
        recovery_pb2.GetRecoveryStatusRequest(), metadata=_auth(token)
    )
    status = response.status
    assert status.replica_id == recovery.recoverer.replica_id
    assert status.leader
    assert status.passes_total == 1
    assert status.interval.seconds == 15
    assert {c.coordinator_id for c in status.coordinators} == {"alpha", "beta", "gamma"}


@pytest.mark.parametrize(
    ("token", "code"),
    [
        (ORG_ADMIN_TOKEN, grpc.StatusCode.PERMISSION_DENIED),
        (WORK_KEY, grpc.StatusCode.PERMISSION_DENIED),
        ("wcadm_unknown", grpc.StatusCode.UNAUTHENTICATED),
        (None, grpc.StatusCode.UNAUTHENTICATED),
    ],
)
async def test_status_refuses_everyone_else(
    stub: RecoveryServiceAsyncStub, token: str | None, code: grpc.StatusCode
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.GetRecoveryStatus(
            recovery_pb2.GetRecoveryStatusRequest(),
            metadata=_auth(token) if token is not None else None,
        )
    assert caught.value.code() == code
    assert error_from_rpc(caught.value).reason == code.name
