"""Tenancy records: parent grants, org members, user tokens, browser sessions and one-time
login codes. A revoke or a use is stamped once: its ``UPDATE`` matches only a row whose stamp
is still unset, and the row count says whether it did."""

from __future__ import annotations

from sqlalchemy import Column, Integer, Table, bindparam, delete, select, update
from sqlalchemy.sql.dml import Update

from ... import schema as t

_G, _M, _TOK, _SES, _CODE = t.grants, t.org_members, t.user_tokens, t.sessions, t.login_codes
_LIMIT = bindparam("limit", type_=Integer)


def _stamp_once(table: Table, key: Column[str], column: str) -> Update:
    """Set ``column`` to ``:when`` on the row whose ``key`` is ``:b_key``, if still unset."""
    return (
        update(table)
        .where(key == bindparam("b_key"), table.c[column].is_(None))
        .values({column: bindparam("when")})
    )


#: The grant ``:grant_id``.
GET_GRANT = select(_G).where(_G.c.grant_id == bindparam("grant_id"))

#: A page of the work coordinator's grants by id, after ``:after``, at most ``:limit``.
LIST_GRANTS = (
    select(_G)
    .where(_G.c.coordinator_id == bindparam("coordinator_id"), _G.c.grant_id > bindparam("after"))
    .order_by(_G.c.grant_id)
    .limit(_LIMIT)
)

#: The child's unrevoked grants to the parent (expired ones included), by id.
GRANTS_BETWEEN = (
    select(_G)
    .where(
        _G.c.parent_coordinator_id == bindparam("parent_coordinator_id"),
        _G.c.coordinator_id == bindparam("coordinator_id"),
        _G.c.revoke_time.is_(None),
    )
    .order_by(_G.c.grant_id)
)

#: Revoke the grant ``:b_key`` at ``:when`` (once).
REVOKE_GRANT = _stamp_once(_G, _G.c.grant_id, "revoke_time")

#: A page of the org's members by user id, after ``:after``, at most ``:limit``.
LIST_MEMBERS = (
    select(_M)
    .where(_M.c.org_slug == bindparam("org_slug"), _M.c.user_id > bindparam("after"))
    .order_by(_M.c.user_id)
    .limit(_LIMIT)
)

#: The member ``:user_id`` of ``:org_slug``.
GET_MEMBER = select(_M).where(
    _M.c.org_slug == bindparam("org_slug"), _M.c.user_id == bindparam("user_id")
)

#: Remove the member ``:user_id`` of ``:org_slug``.
REMOVE_MEMBER = delete(_M).where(
    _M.c.org_slug == bindparam("org_slug"), _M.c.user_id == bindparam("user_id")
)

#: The user token ``:token_id``.
GET_USER_TOKEN = select(_TOK).where(_TOK.c.token_id == bindparam("token_id"))

#: Revoke the user token ``:b_key`` at ``:when`` (once).
REVOKE_USER_TOKEN = _stamp_once(_TOK, _TOK.c.token_id, "revoke_time")

#: The session whose secret hashes to ``:secret_hash``.
FIND_SESSION = select(_SES).where(_SES.c.secret_hash == bindparam("secret_hash"))

#: The session ``:session_id``.
GET_SESSION = select(_SES).where(_SES.c.session_id == bindparam("session_id"))

#: Revoke the session ``:b_key`` at ``:when`` (once).
REVOKE_SESSION = _stamp_once(_SES, _SES.c.session_id, "revoke_time")

#: The login code whose hash is ``:code_hash``.
FIND_LOGIN_CODE = select(_CODE).where(_CODE.c.code_hash == bindparam("code_hash"))

#: Burn the login code ``:b_key`` at ``:when`` (once: a used code matches no row).
USE_LOGIN_CODE = _stamp_once(_CODE, _CODE.c.code_hash, "use_time")
