"""``ErrorInterceptor``'s per-method check: it runs before the method, inside the same error
mapping, on unary and server-streaming calls; unchecked methods are left alone."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextvars import ContextVar
from typing import Any

import grpc
import grpc.aio
import pytest

from workcoord.kit.errors import PermissionDenied
from workcoord.kit.status import CallCheck, ErrorInterceptor, error_from_rpc

_seen: ContextVar[bytes] = ContextVar("seen")
ran: list[str] = []


async def _refuse_b(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> None:
    if request == b"b":
        raise PermissionDenied("no b")
    _seen.set(request)


def _check_for(method: str) -> CallCheck | None:
    return None if method.endswith("/Open") else _refuse_b


async def _echo(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
    ran.append("echo")
    return _seen.get(b"unchecked")


async def _stream(
    request: bytes, context: grpc.aio.ServicerContext[Any, Any]
) -> AsyncIterator[bytes]:
    ran.append("stream")
    yield _seen.get(b"unchecked")


async def _upload(
    requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext[Any, Any]
) -> bytes:
    ran.append("upload")
    return b"uploaded"


@pytest.fixture
async def channel() -> AsyncIterator[grpc.aio.Channel]:
    ran.clear()
    server = grpc.aio.server(interceptors=[ErrorInterceptor(_check_for)])
    handler = grpc.method_handlers_generic_handler(
        "kittest.Checked",
        {
            "Echo": grpc.unary_unary_rpc_method_handler(_echo),
            "Open": grpc.unary_unary_rpc_method_handler(_echo),
            "Stream": grpc.unary_stream_rpc_method_handler(_stream),
            "Upload": grpc.stream_unary_rpc_method_handler(_upload),
        },
    )
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as chan:
        yield chan
    await server.stop(None)


async def test_the_check_runs_first_and_its_refusal_is_the_answer(
    channel: grpc.aio.Channel,
) -> None:
    echo: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(
        "/kittest.Checked/Echo"
    )
    assert await echo(b"a") == b"a"  # what the check set, the method sees
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await echo(b"b")
    assert caught.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert isinstance(error_from_rpc(caught.value), PermissionDenied)
    assert ran == ["echo"]  # the refused call never reached the method


async def test_streams_are_checked_before_their_first_message(channel: grpc.aio.Channel) -> None:
    stream: grpc.aio.UnaryStreamMultiCallable[bytes, bytes] = channel.unary_stream(
        "/kittest.Checked/Stream"
    )
    assert [m async for m in stream(b"a")] == [b"a"]
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        _ = [m async for m in stream(b"b")]
    assert caught.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert ran == ["stream"]


async def test_a_method_without_a_check_runs_unchecked(channel: grpc.aio.Channel) -> None:
    open_call: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(
        "/kittest.Checked/Open"
    )
    assert await open_call(b"b") == b"unchecked"


async def test_a_checked_method_without_a_single_request_is_never_served(
    channel: grpc.aio.Channel,
) -> None:
    upload: grpc.aio.StreamUnaryMultiCallable[bytes, bytes] = channel.stream_unary(
        "/kittest.Checked/Upload"
    )
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await upload(iter([b"a"]))
    assert caught.value.code() != grpc.StatusCode.OK
    assert ran == []
