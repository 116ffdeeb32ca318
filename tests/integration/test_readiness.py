"""The coordinator's readiness is its database: gRPC health turns NOT_SERVING while PostgreSQL
refuses it and SERVING once it answers again; the ``liveness`` service stays SERVING so that
Kubernetes takes the replica out of the Service without restarting it."""

from __future__ import annotations

import asyncio
import secrets
import time

import asyncpg
import grpc.aio
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from sqlalchemy.engine import make_url

from tests.support.databases import admin_database_url
from tests.support.harness import TestClock, start_coordinator_for
from workcoord.kit.grpc_server import LIVENESS_SERVICE

pytestmark = [pytest.mark.pg]

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


async def _admin(statement: str) -> None:
    dsn = make_url(admin_database_url()).set(drivername="postgresql")
    connection = await asyncpg.connect(dsn.render_as_string(hide_password=False))
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


async def _wait_status(stub: health_pb2_grpc.HealthStub, service: str, status: int) -> None:
    deadline = time.monotonic() + 60
    while True:
        reply = await stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
        if reply.status == status:
            return
        assert time.monotonic() < deadline, f"health of {service!r} stayed {reply.status}"
        await asyncio.sleep(0.2)


async def test_readiness_follows_the_database(pg_url: str) -> None:
    name = make_url(pg_url).database
    token, key = f"wcadm_{secrets.token_hex(16)}", f"wcsvc_{secrets.token_hex(16)}"
    running = await start_coordinator_for(pg_url, None, TestClock(), token, key)
    try:
        async with grpc.aio.insecure_channel(running.address) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            await _wait_status(health, "", SERVING)
            await _admin(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
            try:
                await _admin(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    f"WHERE datname = '{name}' AND pid <> pg_backend_pid()"
                )
                await _wait_status(health, "", NOT_SERVING)
                await _wait_status(health, "workcoord.api.v1.LaneService", NOT_SERVING)
                await _wait_status(health, LIVENESS_SERVICE, SERVING)
            finally:
                await _admin(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
            await _wait_status(health, "", SERVING)
    finally:
        await running.stop(0)
