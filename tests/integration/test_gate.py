"""The coordinator's gate with browser sessions, on both backends: a session authenticates like
a token, a state-changing call needs its CSRF token, and both are settled before the request
is validated. (The gate without sessions: ``tests/unit/coordinator/test_gate.py``.)"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.integration.tenancy.world import login, session_metadata, sessions
from tests.support.harness import Stack, expect_error
from workcoord.api.v1 import admin_pb2, feed_pb2, session_pb2
from workcoord.gateway.server import RunningGateway, start_gateway
from workcoord.kit.errors import InvalidArgument, NotFound, PermissionDenied, Unauthenticated
from workcoord.kit.settings import GatewaySettings
from workcoord.kit.wire import bearer_metadata

BAD_ORG = admin_pb2.CreateOrgRequest(org=admin_pb2.Org(slug="Not A Slug"))


async def test_csrf_is_settled_before_the_request_is_validated(stack: Stack) -> None:
    issued = await login(stack)
    browser = stack.client(None)
    secret, csrf = issued.session_secret, issued.csrf_token
    refused = await expect_error(
        browser.admin.CreateOrg(BAD_ORG, metadata=session_metadata(secret)), PermissionDenied
    )
    assert refused.field_violations == []
    invalid = await expect_error(
        browser.admin.CreateOrg(BAD_ORG, metadata=session_metadata(secret, csrf)),
        InvalidArgument,
    )
    assert [v.field for v in invalid.field_violations] == ["org.slug"]
    await expect_error(
        browser.admin.CreateOrg(BAD_ORG, metadata=session_metadata("wcses_unknown")),
        Unauthenticated,
    )


async def test_a_session_reads_and_watches_without_csrf(stack: Stack) -> None:
    issued = await login(stack)
    browser = stack.client(None)
    metadata = session_metadata(issued.session_secret)
    me = await browser.admin.GetCurrentPrincipal(
        admin_pb2.GetCurrentPrincipalRequest(), metadata=metadata
    )
    assert me.principal.id == issued.session.user_id
    call: Any = browser.feed.Watch(
        feed_pb2.WatchRequest(coordinator_id=stack.cid), metadata=metadata
    )
    try:
        first = await call.read()
    finally:
        call.cancel()
    assert first.WhichOneof("frame") == "hello"


async def test_a_bearer_credential_wins_over_a_session(stack: Stack) -> None:
    issued = await login(stack)
    anonymous = stack.client(None)
    both = (*session_metadata(issued.session_secret), *bearer_metadata(stack.admin_token))
    # Authenticated by the token, so there is no session to show.
    await expect_error(
        sessions(anonymous).GetSession(session_pb2.GetSessionRequest(), metadata=both), NotFound
    )
    current = await sessions(anonymous).GetSession(
        session_pb2.GetSessionRequest(), metadata=session_metadata(issued.session_secret)
    )
    assert current.session.session_id == issued.session.session_id


@pytest.fixture
async def gateway(stack: Stack) -> AsyncIterator[RunningGateway]:
    running = await start_gateway(
        GatewaySettings(
            listen_gateway="127.0.0.1:0",
            coordinator_address=stack.address,
            recovery_address=stack.address,
        )
    )
    yield running
    await running.stop()


async def test_a_login_codes_field_rules_are_the_coordinators(gateway: RunningGateway) -> None:
    """``GET /login`` checks nothing itself: a missing or oversized code is refused by the
    coordinator's field rules (400 naming ``code``), like any request."""
    async with httpx.AsyncClient(base_url=f"http://{gateway.address}", timeout=30) as browser:
        for params in ({}, {"code": "x" * 129}):
            answer = await browser.get("/login", params=params)
            assert answer.status_code == 400
            assert answer.headers["cache-control"] == "no-store"
            details = answer.json()["details"]
            violations = [d for d in details if d["@type"].endswith("BadRequest")]
            assert violations[0]["fieldViolations"][0]["field"] == "code"
