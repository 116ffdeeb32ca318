"""The coordinator's gate (``transport/gate.py``): the real servicers behind a grpc.aio server on
loopback with the one interceptor, over the engine on the in-memory store.

Browser sessions need the tenancy records the in-memory store does not keep; the gate's session
and CSRF paths are covered on real databases by ``tests/integration/test_gate.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import grpc.aio
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from workcoord.api.v1 import (
    admin_pb2,
    admin_pb2_grpc,
    feed_pb2,
    feed_pb2_grpc,
    session_pb2,
    session_pb2_grpc,
)
from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.transport.gate import OPEN_METHODS, CallGate, caller
from workcoord.coordinator.transport.servicers import SERVICES
from workcoord.kit.errors import (
    InvalidArgument,
    Unauthenticated,
    Unimplemented,
    WorkcoordError,
)
from workcoord.kit.grpc_server import TlsSettings, bound_port, build_server, start_server
from workcoord.kit.status import ErrorInterceptor, error_from_rpc
from workcoord.kit.wire import API_PACKAGE, CSRF_KEY, SESSION_KEY, bearer_metadata

from .conftest import SERVICE_KEY
from .harness import World

ADMIN_TOKEN = "wcadm_unit-test-admin-token"
NO_CREDENTIAL = "a credential is required: Authorization: Bearer <secret>"


@pytest.fixture
async def channel(engine: Engine) -> AsyncIterator[grpc.aio.Channel]:
    """A channel to the coordinator's services, served with the gate as in ``server.py``."""
    await engine.credentials.bootstrap_admin(ADMIN_TOKEN)
    server = build_server(
        [(add, servicer_class(engine)) for add, servicer_class, _name in SERVICES],
        [f"{API_PACKAGE}.{name}" for _add, _cls, name in SERVICES],
        "127.0.0.1:0",
        [ErrorInterceptor(CallGate(engine).check_for)],
        tls=TlsSettings(),
    )
    await start_server(server)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{bound_port(server)}") as opened:
            yield opened
    finally:
        await server.stop(None)


async def _error(call: Any) -> WorkcoordError:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    return error_from_rpc(caught.value)


BAD_PAGE = admin_pb2.ListOrgsRequest(page_size=-1)


async def test_an_anonymous_caller_learns_only_that_a_credential_is_needed(
    channel: grpc.aio.Channel,
) -> None:
    admin = admin_pb2_grpc.AdminServiceStub(channel)
    for request in (admin_pb2.ListOrgsRequest(), BAD_PAGE):
        err = await _error(admin.ListOrgs(request))
        assert isinstance(err, Unauthenticated)
        assert err.message == NO_CREDENTIAL
        assert err.field_violations == []


async def test_a_bad_request_with_a_credential_names_the_field(
    channel: grpc.aio.Channel,
) -> None:
    admin = admin_pb2_grpc.AdminServiceStub(channel)
    err = await _error(admin.ListOrgs(BAD_PAGE, metadata=bearer_metadata(ADMIN_TOKEN)))
    assert isinstance(err, InvalidArgument)
    assert [v.field for v in err.field_violations] == ["page_size"]
    # A credential that authenticates nobody is refused before the request is looked at.
    err = await _error(admin.ListOrgs(BAD_PAGE, metadata=bearer_metadata("wcadm_nobody")))
    assert isinstance(err, Unauthenticated)
    assert err.message == "unknown credential"


async def test_a_malformed_authorization_never_falls_back_to_a_session(
    channel: grpc.aio.Channel,
) -> None:
    admin = admin_pb2_grpc.AdminServiceStub(channel)
    metadata = (("authorization", "Basic abc"), (SESSION_KEY, "wcses_x"), (CSRF_KEY, "wcses_y"))
    err = await _error(admin.ListOrgs(admin_pb2.ListOrgsRequest(), metadata=metadata))
    assert isinstance(err, Unauthenticated)
    assert err.message.startswith("Authorization must be 'Bearer <secret>'")


async def test_the_method_reads_the_caller_the_gate_authenticated(
    channel: grpc.aio.Channel,
) -> None:
    admin = admin_pb2_grpc.AdminServiceStub(channel)

    async def whoami(secret: str) -> admin_pb2.Principal:
        request = admin_pb2.GetCurrentPrincipalRequest()
        response = await admin.GetCurrentPrincipal(request, metadata=bearer_metadata(secret))
        return response.principal

    # Concurrent calls each see their own caller (one ContextVar, one task per call).
    answers = await asyncio.gather(*(whoami(s) for s in [ADMIN_TOKEN, SERVICE_KEY] * 10))
    assert [a.kind for a in answers] == [
        admin_pb2.Principal.USER,
        admin_pb2.Principal.SERVICE,
    ] * 10
    assert all(a.platform_admin for a in answers[::2])


async def test_open_methods_take_no_credential_but_keep_their_field_rules(
    channel: grpc.aio.Channel,
) -> None:
    assert set(OPEN_METHODS) == {
        f"/{API_PACKAGE}.SessionService/ExchangeLoginCode",
        f"/{API_PACKAGE}.SessionService/ExchangeIdToken",
    }
    sessions = session_pb2_grpc.SessionServiceStub(channel)
    err = await _error(sessions.ExchangeLoginCode(session_pb2.ExchangeLoginCodeRequest()))
    assert isinstance(err, InvalidArgument)
    assert err.field_violations[0].field == "code"
    # Past the gate without a credential: the method itself looks the code up.
    err = await _error(
        sessions.ExchangeLoginCode(session_pb2.ExchangeLoginCodeRequest(code="wcses_code"))
    )
    assert isinstance(err, Unauthenticated)
    assert "login code" in err.message
    # OIDC is not configured here: the method itself answers, after the field rules.
    exchange = sessions.ExchangeIdToken(session_pb2.ExchangeIdTokenRequest(id_token="x", nonce="n"))
    assert isinstance(await _error(exchange), Unimplemented)
    # Every other session call is authenticated like the rest of the API.
    err = await _error(sessions.GetSession(session_pb2.GetSessionRequest()))
    assert isinstance(err, Unauthenticated)


async def test_a_stream_is_authenticated_and_validated_before_its_first_frame(
    channel: grpc.aio.Channel, world: World
) -> None:
    feed = feed_pb2_grpc.FeedServiceStub(channel)
    bad = feed_pb2.WatchRequest(coordinator_id="not valid!")
    good = feed_pb2.WatchRequest(coordinator_id=world.cid)

    async def first_frame(request: feed_pb2.WatchRequest, metadata: Any) -> Any:
        call = feed.Watch(request, metadata=metadata)
        try:
            async for frame in call:
                return frame
        finally:
            call.cancel()
        return None

    for request in (good, bad):
        err = await _error(first_frame(request, None))
        assert isinstance(err, Unauthenticated)
        assert err.message == NO_CREDENTIAL
    err = await _error(first_frame(bad, bearer_metadata(ADMIN_TOKEN)))
    assert isinstance(err, InvalidArgument)
    assert [v.field for v in err.field_violations] == ["coordinator_id"]
    frame = await first_frame(good, bearer_metadata(ADMIN_TOKEN))
    assert frame.WhichOneof("frame") == "hello"
    assert frame.hello.coordinator_id == world.cid


async def test_health_and_reflection_answer_anyone(channel: grpc.aio.Channel) -> None:
    health = health_pb2_grpc.HealthStub(channel)
    reply = await health.Check(health_pb2.HealthCheckRequest(service=""))
    assert reply.status == health_pb2.HealthCheckResponse.SERVING
    reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
    call = reflection.ServerReflectionInfo(
        iter([reflection_pb2.ServerReflectionRequest(list_services="")])
    )
    async for response in call:
        names = {s.name for s in response.list_services_response.service}
        assert f"{API_PACKAGE}.LaneService" in names
        break


def test_caller_outside_a_gated_call_is_a_bug() -> None:
    with pytest.raises(RuntimeError, match="no authenticated caller"):
        caller()
