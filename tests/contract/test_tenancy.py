"""Tenancy records: parent grants, org members, user tokens, sessions and login codes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from workcoord.coordinator.domain.grants import LoginCode, MemberRecord, SessionRecord, TokenRecord
from workcoord.coordinator.domain.ports import OrgRecord, Store

from .records import T0, at, grant, user


@pytest.mark.port("insert_grant", "get_grant", "list_grants")
async def test_grants_of_a_child(store: Store) -> None:
    grants = [
        grant("gr_b", request_id="req-1"),
        grant("gr_a"),
        grant("gr_c", child="wc_other"),
        grant("gr_d"),
    ]
    async with store.write() as tx:
        for record in grants:
            await tx.insert_grant(record)
    async with store.write() as tx:
        assert await tx.get_grant("gr_b") == grants[0]
        assert await tx.get_grant("gr_x") is None

        async def ids(child: str, after: str, limit: int) -> list[str]:
            return [g.grant_id for g in await tx.list_grants(child, after, limit)]

        assert await ids("wc_a", "", 10) == ["gr_a", "gr_b", "gr_d"]
        assert await ids("wc_a", "gr_a", 10) == ["gr_b", "gr_d"]
        assert await ids("wc_a", "", 2) == ["gr_a", "gr_b"]
        assert await ids("wc_other", "", 10) == ["gr_c"]


@pytest.mark.port("grants_between", "revoke_grant")
async def test_grants_between_a_child_and_its_parent_leave_revoked_ones_out(
    store: Store,
) -> None:
    async with store.write() as tx:
        await tx.insert_grant(grant("gr_b"))
        await tx.insert_grant(grant("gr_a"))
        await tx.insert_grant(grant("gr_old", revoke_time=at(5)))
        await tx.insert_grant(grant("gr_elsewhere", parent="wc_other_parent"))
        await tx.insert_grant(grant("gr_sibling", child="wc_b"))
    async with store.write() as tx:
        assert [g.grant_id for g in await tx.grants_between("wc_a", "wc_parent")] == [
            "gr_a",
            "gr_b",
        ]
        await tx.revoke_grant("gr_a", at(10))
        await tx.revoke_grant("gr_missing", at(10))  # no-op
    async with store.write() as tx:
        await tx.revoke_grant("gr_a", at(20))  # revoked once: the first time stays
        assert [g.grant_id for g in await tx.grants_between("wc_a", "wc_parent")] == ["gr_b"]
        assert await tx.get_grant("gr_a") == grant("gr_a", revoke_time=at(10))
        assert await tx.grants_between("wc_parent", "wc_a") == []


@pytest.mark.port("list_members", "get_member", "remove_member")
async def test_members_of_an_org(store: Store) -> None:
    async with store.write() as tx:
        await tx.insert_org(OrgRecord("acme", "Acme", T0))
        await tx.insert_org(OrgRecord("beta", "Beta", T0))
        for uid in ("usr_c", "usr_a", "usr_b"):
            await tx.insert_user(user(uid))
            await tx.set_member("acme", uid, "MEMBER", at(1))
        await tx.set_member("beta", "usr_a", "ADMIN", at(2))
    async with store.write() as tx:

        async def ids(org: str, after: str, limit: int) -> list[str]:
            return [m.user_id for m in await tx.list_members(org, after, limit)]

        assert await ids("acme", "", 10) == ["usr_a", "usr_b", "usr_c"]
        assert await ids("acme", "usr_a", 1) == ["usr_b"]
        assert await ids("beta", "", 10) == ["usr_a"]
        assert await tx.get_member("beta", "usr_a") == MemberRecord("beta", "usr_a", "ADMIN", at(2))
        assert await tx.get_member("beta", "usr_b") is None
        assert await tx.remove_member("acme", "usr_b") is True
        assert await tx.remove_member("acme", "usr_b") is False
    async with store.read() as reader:
        assert [m.user_id for m in await reader.list_members("acme", "", 10)] == [
            "usr_a",
            "usr_c",
        ]


@pytest.mark.port("get_user_token", "revoke_user_token")
async def test_a_user_token_is_revoked_once(store: Store) -> None:
    async with store.write() as tx:
        await tx.insert_user(user("usr_a"))
        await tx.insert_user_token(TokenRecord("tok_a", "usr_a", "laptop", T0), "a" * 64)
    async with store.write() as tx:
        assert await tx.get_user_token("tok_a") == TokenRecord("tok_a", "usr_a", "laptop", T0)
        assert await tx.get_user_token("tok_x") is None
        await tx.revoke_user_token("tok_a", at(3))
        await tx.revoke_user_token("tok_a", at(4))
        await tx.revoke_user_token("tok_x", at(4))  # no-op
    async with store.read() as reader:
        assert await reader.get_user_token("tok_a") == TokenRecord(
            "tok_a", "usr_a", "laptop", T0, revoke_time=at(3)
        )
        credential = await reader.find_credential("a" * 64)
    assert credential is not None and credential.revoke_time == at(3)


@pytest.mark.port("insert_session", "find_session", "get_session", "revoke_session")
async def test_a_session_by_id_and_by_secret(store: Store) -> None:
    session = SessionRecord("ses_a", "usr_a", "s" * 64, "c" * 64, T0, at(3600))
    async with store.write() as tx:
        await tx.insert_user(user("usr_a"))
        await tx.insert_session(session)
    async with store.write() as tx:
        assert await tx.get_session("ses_a") == session
        assert await tx.find_session("s" * 64) == session
        assert await tx.find_session("c" * 64) is None
        assert await tx.get_session("ses_x") is None
        await tx.revoke_session("ses_a", at(7))
        await tx.revoke_session("ses_a", at(8))
    async with store.read() as reader:
        assert await reader.get_session("ses_a") == replace(session, revoke_time=at(7))


@pytest.mark.port("insert_login_code", "find_login_code", "use_login_code")
async def test_a_login_code_is_used_once(store: Store) -> None:
    code = LoginCode("h" * 64, "usr_a", T0, at(600))
    async with store.write() as tx:
        await tx.insert_user(user("usr_a"))
        await tx.insert_login_code(code)
    async with store.write() as tx:
        assert await tx.find_login_code("h" * 64) == code
        assert await tx.find_login_code("x" * 64) is None
        assert await tx.use_login_code("h" * 64, at(5)) is True
        assert await tx.use_login_code("h" * 64, at(6)) is False
        assert await tx.use_login_code("x" * 64, at(6)) is False
    async with store.read() as reader:
        assert await reader.find_login_code("h" * 64) == replace(code, use_time=at(5))
