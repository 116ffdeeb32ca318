"""Who may call: orgs, users and their org roles, user tokens and work keys, and the lookup of
a credential by its secret's hash."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Integer, Select, bindparam, literal, null, select, update
from sqlalchemy.sql.elements import BindParameter

from ... import schema as t
from ._dialects import upsert

_SETTINGS = t.platform_settings
_LIMIT = bindparam("limit", type_=Integer)

#: The user token whose secret hashes to ``:secret_hash``.
TOKEN_BY_HASH = select(t.user_tokens).where(t.user_tokens.c.secret_hash == bindparam("secret_hash"))

#: The work key whose secret hashes to ``:secret_hash``.
WORK_KEY_BY_HASH = select(t.work_keys).where(t.work_keys.c.secret_hash == bindparam("secret_hash"))

# The user token's columns RESOLVE_CREDENTIAL selects.
TOKEN_COLUMNS = ("token_id", "user_id", "expire_time", "revoke_time")


def resolve_credential(*, with_epoch: bool = True) -> Any:
    """One row per org role (at least one): a probe row left-joined to the work key and to the
    user token, its user and their memberships with the hash ``:secret_hash`` (at most one of
    the two matches: the hashes of 256-bit secrets do not collide), and the credentials epoch
    (NULL without ``with_epoch``: a schema before 0006 has none). Columns by position: the
    epoch, the work key's, :data:`TOKEN_COLUMNS`, the user's, the role's org and role."""
    secret_hash: BindParameter[str] = bindparam("secret_hash")
    epoch: Any = (
        select(_SETTINGS.c.credentials_epoch).where(_SETTINGS.c.id == 1).scalar_subquery()
        if with_epoch
        else null()
    )
    epoch = epoch.label("credentials_epoch")
    probe = select(literal(1).label("one")).subquery("probe")
    wk, tok, u, m = t.work_keys, t.user_tokens, t.users, t.org_members
    columns = [epoch, *wk.c, *(tok.c[n] for n in TOKEN_COLUMNS), *u.c, m.c.org_slug, m.c.role]
    joined = (
        probe.outerjoin(wk, wk.c.secret_hash == secret_hash)
        .outerjoin(tok, tok.c.secret_hash == secret_hash)
        .outerjoin(u, u.c.user_id == tok.c.user_id)
        .outerjoin(m, m.c.user_id == u.c.user_id)
    )
    return select(*columns).select_from(joined)


#: AUTHENTICATION's one read: the credential with ``:secret_hash``, its owner, their roles and
#: the credentials epoch (see :func:`resolve_credential`).
RESOLVE_CREDENTIAL = resolve_credential()

#: The credentials epoch (moved by every change to credentials, users or roles).
CREDENTIALS_EPOCH = select(_SETTINGS.c.credentials_epoch).where(_SETTINGS.c.id == 1)

#: The org ``:slug``.
GET_ORG = select(t.orgs).where(t.orgs.c.slug == bindparam("slug"))

#: A page of orgs by slug, after ``:after``, at most ``:limit``.
LIST_ORGS = (
    select(t.orgs).where(t.orgs.c.slug > bindparam("after")).order_by(t.orgs.c.slug).limit(_LIMIT)
)

#: The user ``:user_id``.
GET_USER = select(t.users).where(t.users.c.user_id == bindparam("user_id"))

#: The user with the email ``:email``.
USER_BY_EMAIL = select(t.users).where(t.users.c.email == bindparam("email"))

#: A page of users by id, after ``:after``, at most ``:limit``.
LIST_USERS = (
    select(t.users)
    .where(t.users.c.user_id > bindparam("after"))
    .order_by(t.users.c.user_id)
    .limit(_LIMIT)
)

#: The org roles of ``:user_id`` (org slug, role).
USER_ROLES = select(t.org_members.c.org_slug, t.org_members.c.role).where(
    t.org_members.c.user_id == bindparam("user_id")
)


def _set_member(insert: Any) -> Any:
    stmt = insert(t.org_members)
    return stmt.on_conflict_do_update(
        index_elements=["org_slug", "user_id"], set_={"role": stmt.excluded.role}
    )


#: Add the member, or change the role of an existing one (who keeps its create time).
SET_MEMBER = upsert(_set_member)

#: The work key ``:key_id``.
GET_WORK_KEY = select(t.work_keys).where(t.work_keys.c.key_id == bindparam("key_id"))


def list_work_keys(org_slug: str, after_id: str, limit: int) -> Select[Any]:
    """A page of work keys (of ``org_slug``, or all) by id, after ``after_id``."""
    c = t.work_keys.c
    stmt = select(t.work_keys).where(c.key_id > after_id)
    if org_slug:
        stmt = stmt.where(c.org_slug == org_slug)
    return stmt.order_by(c.key_id).limit(limit)


#: Revoke the work key ``:b_key_id`` at ``:revoke_time``.
REVOKE_WORK_KEY = (
    update(t.work_keys)
    .where(t.work_keys.c.key_id == bindparam("b_key_id"))
    .values(revoke_time=bindparam("revoke_time"))
)
