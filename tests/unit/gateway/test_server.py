"""The gateway served by uvicorn on an ephemeral port, and the WebSocket feed."""

from __future__ import annotations

import json
import socket

import httpx
import pytest
import websockets
from websockets.asyncio.client import connect

from workcoord.gateway.server import start_gateway

from .conftest import Recorder, Upstream, gateway_settings


async def test_serves_on_an_ephemeral_port_and_bridges_the_feed(
    upstream: Upstream, recorder: Recorder
) -> None:
    running = await start_gateway(gateway_settings(upstream.address))
    try:
        host, port = running.address.rsplit(":", 1)
        assert host == "127.0.0.1" and int(port) > 0
        async with httpx.AsyncClient(base_url=f"http://{running.address}") as http:
            assert (await http.get("/healthz")).json() == {"status": "ok"}
            assert (await http.get("/readyz")).status_code == 200

        url = f"ws://{running.address}/v1/work-coordinators/wc-1/ws?since=38"
        async with connect(url, additional_headers={"Authorization": "Bearer k"}) as socket:
            hello = json.loads(await socket.recv())
            ping = json.loads(await socket.recv())
            with pytest.raises(websockets.ConnectionClosedOK):
                await socket.recv()
        assert hello == {
            "type": "hello",
            "coordinatorId": "wc-1",
            "revision": "41",
            "pingSeconds": 15,
            "resumeFrom": "38",
        }
        assert ping == {"type": "ping", "revision": "41"}
        assert recorder.last("Watch").metadata["authorization"] == "Bearer k"

        # Authority gone mid-stream: the socket closes with 1008.
        url = f"ws://{running.address}/v1/work-coordinators/wc-1/ws?since=7"
        async with connect(url) as socket:
            await socket.recv()
            await socket.recv()
            with pytest.raises(websockets.ConnectionClosedError) as closed:
                await socket.recv()
        assert closed.value.rcvd is not None
        assert closed.value.rcvd.code == 1008
        assert closed.value.rcvd.reason.startswith("PERMISSION_DENIED")

        # A bad query closes at once with 1008 too.
        url = f"ws://{running.address}/v1/work-coordinators/wc-1/ws?since=soon"
        async with connect(url) as socket:
            with pytest.raises(websockets.ConnectionClosedError) as closed:
                await socket.recv()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
    finally:
        await running.stop()


async def test_accepted_connections_get_tcp_nodelay(upstream: Upstream) -> None:
    """asyncio sets TCP_NODELAY on an accepted socket only when the listening socket's proto is
    IPPROTO_TCP (accepted sockets inherit it); bound with proto 0, Nagle and the client's
    delayed ACK held every response back ~40 ms."""
    running = await start_gateway(gateway_settings(upstream.address))
    try:
        listening = [sock for server in running._server.servers for sock in server.sockets]
        assert [sock.proto for sock in listening] == [socket.IPPROTO_TCP]
    finally:
        await running.stop()
