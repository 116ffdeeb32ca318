from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import grpc
import grpc.aio
import pytest
from google.protobuf import struct_pb2
from google.rpc import error_details_pb2, status_pb2

from workcoord.kit import errors
from workcoord.kit.errors import Code, FieldViolation, InvalidArgument, LeaseLost
from workcoord.kit.status import (
    MAX_REPORTED_VIOLATIONS,
    OMITTED_VIOLATIONS_KEY,
    ErrorInterceptor,
    error_from_rpc,
    error_from_status,
    error_to_json,
    status_to_json,
    to_rpc_status,
)


def test_status_carries_error_info_and_bad_request() -> None:
    err = InvalidArgument([FieldViolation("lease_seconds", "must be between 5 and 300")])
    status = to_rpc_status(err)
    assert status.code == 3
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    assert (info.reason, info.domain) == ("INVALID_ARGUMENT", "workcoord")
    bad = error_details_pb2.BadRequest()
    assert status.details[1].Unpack(bad)
    assert bad.field_violations[0].field == "lease_seconds"


def test_json_form_matches_api_md() -> None:
    err = InvalidArgument([FieldViolation("lease_seconds", "must be between 5 and 300")])
    http, body = error_to_json(err)
    assert http == 400
    assert body == {
        "code": 3,
        "message": "invalid argument: lease_seconds must be between 5 and 300",
        "details": [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "INVALID_ARGUMENT",
                "domain": "workcoord",
            },
            {
                "@type": "type.googleapis.com/google.rpc.BadRequest",
                "fieldViolations": [
                    {"field": "lease_seconds", "description": "must be between 5 and 300"}
                ],
            },
        ],
    }
    lost = status_to_json(to_rpc_status(LeaseLost("expired")))
    assert lost["details"][0]["metadata"] == {"cause": "expired"}
    assert lost["code"] == 10


@pytest.mark.parametrize(
    "err",
    [
        InvalidArgument([FieldViolation("a", "is required"), FieldViolation("b[1].c", "bad")]),
        LeaseLost("terminal"),
        errors.EtagMismatch(),
        errors.TooLarge("inputs over 64 KiB"),
        errors.CoordinationDisabled(),
    ],
)
def test_round_trip_through_status(err: errors.WorkcoordError) -> None:
    back = error_from_status(status_pb2.Status.FromString(to_rpc_status(err).SerializeToString()))
    assert type(back) is type(err)
    assert (back.reason, back.code, back.message) == (err.reason, err.code, err.message)
    assert back.metadata == err.metadata
    assert back.field_violations == err.field_violations


def test_unknown_reason_becomes_generic_error() -> None:
    status = status_pb2.Status(code=8, message="quota")
    status.details.add().Pack(error_details_pb2.ErrorInfo(reason="QUOTA", domain="other"))
    err = error_from_status(status)
    assert type(err) is errors.WorkcoordError
    assert (err.code, err.reason) == (Code.RESOURCE_EXHAUSTED, "QUOTA")
    bare = error_from_status(status_pb2.Status(code=5, message="gone"))
    assert isinstance(bare, errors.NotFound)


def _flood(count: int, text: str = "must match [a-z][a-z0-9-]{0,31}") -> InvalidArgument:
    return InvalidArgument(
        [FieldViolation(f"lane.items[{i}].depends_on[{i}]", text) for i in range(count)]
    )


def test_a_status_reports_the_first_violations_and_counts_the_rest() -> None:
    status = to_rpc_status(_flood(5000))
    info, bad = error_details_pb2.ErrorInfo(), error_details_pb2.BadRequest()
    assert status.details[0].Unpack(info) and status.details[1].Unpack(bad)
    assert len(bad.field_violations) == MAX_REPORTED_VIOLATIONS
    assert bad.field_violations[0].field == "lane.items[0].depends_on[0]"
    assert info.metadata[OMITTED_VIOLATIONS_KEY] == str(5000 - MAX_REPORTED_VIOLATIONS)
    assert "(and 4995 more)" in status.message
    # Well under gRPC's 8 KiB soft limit on trailers, with its encodings.
    assert len(status.SerializeToString()) < 4096
    # The rebuilt error says the same.
    rebuilt = error_from_status(status)
    assert isinstance(rebuilt, InvalidArgument)
    assert len(rebuilt.field_violations) == MAX_REPORTED_VIOLATIONS


def test_long_texts_are_cut_and_fewer_violations_fit() -> None:
    status = to_rpc_status(_flood(50, "é" * 5000))
    bad = error_details_pb2.BadRequest()
    assert status.details[1].Unpack(bad)
    assert 1 <= len(bad.field_violations) < MAX_REPORTED_VIOLATIONS
    assert all(len(v.description.encode()) <= 256 for v in bad.field_violations)
    assert bad.field_violations[0].description.endswith("…")
    assert len(status.message.encode()) <= 512
    assert len(status.SerializeToString()) < 4096
    # A short list is sent whole, with no count.
    small = to_rpc_status(_flood(3))
    assert small.details[1].Unpack(bad) and len(bad.field_violations) == 3
    info = error_details_pb2.ErrorInfo()
    assert small.details[0].Unpack(info) and OMITTED_VIOLATIONS_KEY not in info.metadata


# --- a real grpc.aio server with the interceptor ---------------------------------------------


async def _typed(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
    raise InvalidArgument([FieldViolation("lease_seconds", "must be between 5 and 300")])


async def _lost(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
    raise LeaseLost("expired")


async def _crash(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
    raise RuntimeError("db password is hunter2")


async def _echo(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
    return request


async def _explicit_abort(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
    await context.abort(grpc.StatusCode.OUT_OF_RANGE, "too far")
    return b""


async def _stream(
    request: bytes, context: grpc.aio.ServicerContext[Any, Any]
) -> AsyncIterator[bytes]:
    yield b"one"
    raise LeaseLost("superseded")


async def _stream_crash(
    request: bytes, context: grpc.aio.ServicerContext[Any, Any]
) -> AsyncIterator[bytes]:
    yield b"one"
    raise KeyError("secret-key-name")


async def _flooded(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
    raise _flood(10_000)


async def _struct_echo(
    request: struct_pb2.Struct, context: grpc.aio.ServicerContext[Any, Any]
) -> bytes:
    return request.SerializeToString()


def _unary(fn: Any) -> Any:
    return grpc.unary_unary_rpc_method_handler(fn)


@pytest.fixture(scope="module")
async def channel() -> AsyncIterator[grpc.aio.Channel]:
    server = grpc.aio.server(interceptors=[ErrorInterceptor()])
    handler = grpc.method_handlers_generic_handler(
        "kittest.Svc",
        {
            "Typed": _unary(_typed),
            "Lost": _unary(_lost),
            "Crash": _unary(_crash),
            "Echo": _unary(_echo),
            "Abort": _unary(_explicit_abort),
            "Stream": grpc.unary_stream_rpc_method_handler(_stream),
            "StreamCrash": grpc.unary_stream_rpc_method_handler(_stream_crash),
            "Flood": _unary(_flooded),
            "Struct": grpc.unary_unary_rpc_method_handler(
                _struct_echo, request_deserializer=struct_pb2.Struct.FromString
            ),
        },
    )
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as chan:
        yield chan
    await server.stop(None)


def _unary_call(
    channel: grpc.aio.Channel, method: str
) -> grpc.aio.UnaryUnaryMultiCallable[bytes, bytes]:
    return channel.unary_unary(f"/kittest.Svc/{method}")


def _stream_call(
    channel: grpc.aio.Channel, method: str
) -> grpc.aio.UnaryStreamMultiCallable[bytes, bytes]:
    return channel.unary_stream(f"/kittest.Svc/{method}")


async def _call(channel: grpc.aio.Channel, method: str) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await _unary_call(channel, method)(b"x")
    return raised.value


async def test_typed_error_arrives_with_details(channel: grpc.aio.Channel) -> None:
    exc = await _call(channel, "Typed")
    assert exc.code() == grpc.StatusCode.INVALID_ARGUMENT
    err = error_from_rpc(exc)
    assert isinstance(err, InvalidArgument)
    assert err.field_violations == [FieldViolation("lease_seconds", "must be between 5 and 300")]
    lost = error_from_rpc(await _call(channel, "Lost"))
    assert isinstance(lost, LeaseLost) and lost.cause == "expired"


async def test_unexpected_exception_is_internal_without_leak(
    channel: grpc.aio.Channel, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="workcoord.kit.status"):
        exc = await _call(channel, "Crash")
    assert exc.code() == grpc.StatusCode.INTERNAL
    assert exc.details() == "internal error"
    assert "hunter2" not in str(exc.trailing_metadata())
    err = error_from_rpc(exc)
    assert isinstance(err, errors.Internal) and err.message == "internal error"
    # The traceback is logged for operators.
    assert any(r.exc_info and "hunter2" in str(r.exc_info[1]) for r in caplog.records)


async def test_success_and_explicit_abort_pass_through(channel: grpc.aio.Channel) -> None:
    assert await _unary_call(channel, "Echo")(b"hello") == b"hello"
    exc = await _call(channel, "Abort")
    assert exc.code() == grpc.StatusCode.OUT_OF_RANGE
    err = error_from_rpc(exc)
    assert err.code is Code.OUT_OF_RANGE and err.message == "too far"


async def test_stream_errors(channel: grpc.aio.Channel) -> None:
    call = _stream_call(channel, "Stream")(b"x")
    got = []
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        async for message in call:
            got.append(message)
    assert got == [b"one"]
    assert isinstance(error_from_rpc(raised.value), LeaseLost)
    call = _stream_call(channel, "StreamCrash")(b"x")
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        async for _ in call:
            pass
    assert raised.value.code() == grpc.StatusCode.INTERNAL
    assert "secret-key-name" not in (raised.value.details() or "")


async def test_a_flood_of_violations_stays_invalid_argument(channel: grpc.aio.Channel) -> None:
    # Unbounded, 10,000 violations overflow gRPC's trailers: RESOURCE_EXHAUSTED with its text.
    exc = await _call(channel, "Flood")
    assert exc.code() == grpc.StatusCode.INVALID_ARGUMENT
    err = error_from_rpc(exc)
    assert isinstance(err, InvalidArgument)
    assert len(err.field_violations) == MAX_REPORTED_VIOLATIONS
    assert err.metadata[OMITTED_VIOLATIONS_KEY] == str(10_000 - MAX_REPORTED_VIOLATIONS)


def _nested_struct(levels: int) -> bytes:
    inner: Any = "leaf"
    for _ in range(levels - 1):
        inner = {"a": inner}
    message = struct_pb2.Struct()
    message.update({"a": inner})
    return message.SerializeToString()


async def test_a_request_protobuf_cannot_decode_is_invalid_argument(
    channel: grpc.aio.Channel,
) -> None:
    call = _unary_call(channel, "Struct")
    assert struct_pb2.Struct.FromString(await call(_nested_struct(20))).fields["a"]
    # Nested past upb's 100 levels (3 a level): gRPC alone answers UNKNOWN.
    deep = _nested_struct(40)
    with pytest.raises(Exception, match="MaxDepth"):
        struct_pb2.Struct.FromString(deep)
    for raw in (deep, b"\xff\xff\xff"):
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await call(raw)
        assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert isinstance(error_from_rpc(raised.value), InvalidArgument)
