"""With PostgreSQL unreachable every call answers UNAVAILABLE (retryable), never INTERNAL, and
the gateway's 503 says when to retry; once the database is back, calls succeed again.

The coordinator reaches the real PostgreSQL through a loopback TCP proxy the test cuts (a real
outage: connections dropped, new ones refused). Before, a refused connection surfaced as a bare
``ConnectionRefusedError`` and was answered INTERNAL (500).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest

from tests.support.harness import Stack, start_gateway_for, start_stack
from tests.support.tcp_proxy import TcpProxy
from workcoord.api.v1 import lane_pb2, work_coordinator_pb2
from workcoord.kit.errors import Code, WorkcoordError


@pytest.fixture
async def proxy(pg_url: str) -> AsyncIterator[TcpProxy]:
    parts = urlsplit(pg_url)
    started = await TcpProxy(parts.hostname or "127.0.0.1", parts.port or 5432).start()
    yield started
    await started.cut()


@pytest.fixture
async def outage_stack(pg_url: str, proxy: TcpProxy, redis: str) -> AsyncIterator[Stack]:
    parts = urlsplit(pg_url)
    netloc = f"{parts.username}@127.0.0.1:{proxy.port}" if parts.username else None
    proxied = urlunsplit(parts._replace(netloc=netloc or f"127.0.0.1:{proxy.port}"))
    started = await start_stack("postgres", proxied, redis)
    yield started
    await started.close()


async def _get(stack: Stack) -> work_coordinator_pb2.WorkCoordinator:
    response = await stack.admin.coordinators.GetWorkCoordinator(
        work_coordinator_pb2.GetWorkCoordinatorRequest(coordinator_id=stack.cid)
    )
    return response.work_coordinator


async def test_an_unreachable_database_answers_unavailable(
    outage_stack: Stack, proxy: TcpProxy
) -> None:
    stack = outage_stack
    await _get(stack)
    gateway = await start_gateway_for(stack.address)
    try:
        await proxy.cut()
        calls: list[Awaitable[object]] = [
            _get(stack),
            stack.worker.lanes.ListLanes(lane_pb2.ListLanesRequest(coordinator_id=stack.cid)),
            stack.create_lane(
                lane_pb2.Item(key="a", kind=lane_pb2.Item.TASK, worker_class="machine", title="a")
            ),
        ]
        for call in calls:
            with pytest.raises(WorkcoordError) as caught:
                await call
            assert caught.value.code == Code.UNAVAILABLE, caught.value
            assert caught.value.reason == "STORAGE_UNAVAILABLE"

        async with httpx.AsyncClient(base_url=f"http://{gateway.address}") as http:
            response = await http.get(
                f"/v1/work-coordinators/{stack.cid}",
                headers={"Authorization": f"Bearer {stack.admin_token}"},
            )
        assert response.status_code == 503, response.text
        assert response.headers["retry-after"] == "1"

        await proxy.restore()
        assert (await _get(stack)).coordinator_id == stack.cid
    finally:
        await gateway.stop()
