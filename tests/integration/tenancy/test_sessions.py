"""Browser sessions: one-time login codes, sessions acting with the user's current roles,
CSRF on state-changing calls, ending and expiry."""

from __future__ import annotations

from datetime import timedelta

from tests.integration.tenancy.world import (
    Role,
    login,
    new_user,
    session_metadata,
    sessions,
)
from tests.support.harness import Stack, expect_error
from workcoord.api.v1 import admin_pb2, session_pb2, work_coordinator_pb2
from workcoord.kit.errors import NotFound, PermissionDenied, Unauthenticated

A = admin_pb2
S = session_pb2


async def test_a_login_code_is_one_time_and_short_lived(stack: Stack) -> None:
    anonymous = sessions(stack.client(None))
    code = await sessions(stack.admin).CreateLoginCode(S.CreateLoginCodeRequest())
    assert code.code and code.user_id
    issued = await anonymous.ExchangeLoginCode(S.ExchangeLoginCodeRequest(code=code.code))
    assert issued.session_secret and issued.csrf_token
    assert issued.session.user_id == code.user_id
    await expect_error(
        anonymous.ExchangeLoginCode(S.ExchangeLoginCodeRequest(code=code.code)), Unauthenticated
    )
    late = await sessions(stack.admin).CreateLoginCode(S.CreateLoginCodeRequest())
    stack.clock.advance(timedelta(minutes=10))
    await expect_error(
        anonymous.ExchangeLoginCode(S.ExchangeLoginCodeRequest(code=late.code)), Unauthenticated
    )
    await expect_error(
        anonymous.ExchangeLoginCode(S.ExchangeLoginCodeRequest(code="wcses_nope")),
        Unauthenticated,
    )
    # Only verified platform admins mint codes.
    org_admin = await new_user(stack, role=Role.ORG_ADMIN)
    await expect_error(
        sessions(org_admin.client).CreateLoginCode(S.CreateLoginCodeRequest()), PermissionDenied
    )
    await expect_error(
        sessions(stack.worker).CreateLoginCode(S.CreateLoginCodeRequest()), PermissionDenied
    )


async def test_a_session_acts_with_current_roles_and_csrf_guards_changes(stack: Stack) -> None:
    viewer = await new_user(stack, role=Role.ORG_VIEWER)
    issued = await login(stack, viewer.user_id)
    browser = stack.client(None)
    secret, csrf = issued.session_secret, issued.csrf_token
    me = await browser.admin.GetCurrentPrincipal(
        A.GetCurrentPrincipalRequest(), metadata=session_metadata(secret)
    )
    assert me.principal.id == viewer.user_id
    get = work_coordinator_pb2.GetWorkCoordinatorRequest(coordinator_id=stack.cid)
    await browser.coordinators.GetWorkCoordinator(get, metadata=session_metadata(secret))
    current = await sessions(browser).GetSession(
        S.GetSessionRequest(), metadata=session_metadata(secret)
    )
    assert current.session.session_id == issued.session.session_id

    # A state-changing call needs the session's CSRF token, whatever the role allows.
    org = A.CreateOrgRequest(org=A.Org(slug="from-browser"))
    admin_issued = await login(stack)
    admin_secret, admin_csrf = admin_issued.session_secret, admin_issued.csrf_token
    for metadata in (
        session_metadata(admin_secret),
        session_metadata(admin_secret, "wcses_wrong"),
        session_metadata(admin_secret, csrf),  # another session's token
    ):
        await expect_error(browser.admin.CreateOrg(org, metadata=metadata), PermissionDenied)
    await browser.admin.CreateOrg(org, metadata=session_metadata(admin_secret, admin_csrf))

    # Roles are read on every request: removing the viewer hides the org at once.
    await stack.admin.admin.RemoveOrgMember(
        A.RemoveOrgMemberRequest(org_slug=stack.org, user_id=viewer.user_id)
    )
    await expect_error(
        browser.coordinators.GetWorkCoordinator(get, metadata=session_metadata(secret)), NotFound
    )

    # Ending the session (a change: CSRF needed) fails its very next call.
    await expect_error(
        sessions(browser).EndSession(S.EndSessionRequest(), metadata=session_metadata(secret)),
        PermissionDenied,
    )
    ended = await sessions(browser).EndSession(
        S.EndSessionRequest(), metadata=session_metadata(secret, csrf)
    )
    assert ended.session.HasField("end_time")
    await expect_error(
        browser.admin.GetCurrentPrincipal(
            A.GetCurrentPrincipalRequest(), metadata=session_metadata(secret)
        ),
        Unauthenticated,
    )


async def test_sessions_expire_and_are_no_bearer_credential(stack: Stack) -> None:
    issued = await login(stack)
    browser = stack.client(None)
    # A session secret is only a session: as a bearer token it is unknown.
    await expect_error(
        stack.client(issued.session_secret).admin.GetCurrentPrincipal(
            A.GetCurrentPrincipalRequest()
        ),
        Unauthenticated,
    )
    # A bearer caller has no session to show.
    await expect_error(sessions(stack.admin).GetSession(S.GetSessionRequest()), NotFound)
    await browser.admin.GetCurrentPrincipal(
        A.GetCurrentPrincipalRequest(), metadata=session_metadata(issued.session_secret)
    )
    stack.clock.advance(timedelta(hours=12))
    await expect_error(
        browser.admin.GetCurrentPrincipal(
            A.GetCurrentPrincipalRequest(), metadata=session_metadata(issued.session_secret)
        ),
        Unauthenticated,
    )
