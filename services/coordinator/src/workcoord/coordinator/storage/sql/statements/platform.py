"""Installation-wide rows: secrets, request ids, the platform settings (the switch) and the
recovery service's leaderships."""

from __future__ import annotations

from sqlalchemy import bindparam, select, update

from ... import schema as t
from ._dialects import upsert

_S, _R, _SETTINGS, _LEAD = t.installation_secrets, t.request_ids, t.platform_settings, t.leaderships

#: Keep ``:secret`` as the secret ``:name`` unless one is kept already.
KEEP_SECRET = upsert(lambda insert: insert(_S).on_conflict_do_nothing())

#: The kept secret ``:name``.
SECRET = select(_S.c.secret).where(_S.c.name == bindparam("name"))

#: The create that carried ``:request_id`` in ``:scope``.
FIND_REQUEST = select(_R).where(
    _R.c.scope == bindparam("scope"), _R.c.request_id == bindparam("request_id")
)

#: Record a create's request id.
INSERT_REQUEST = _R.insert()

#: Create the settings row (switch on, version 1) unless it exists.
ENSURE_SETTINGS = upsert(lambda insert: insert(_SETTINGS).on_conflict_do_nothing())

#: The settings row.
SETTINGS = select(_SETTINGS).where(_SETTINGS.c.id == 1)

#: Turn the switch to ``:enabled`` at ``:when``, moving the settings' version.
SET_PLATFORM_ENABLED = (
    update(_SETTINGS)
    .where(_SETTINGS.c.id == 1)
    .values(
        work_coordinator_enabled=bindparam("enabled"),
        version=_SETTINGS.c.version + 1,
        update_time=bindparam("when"),
    )
)

#: Create the leadership ``:name`` (term 1) for ``:holder_id`` unless it exists.
CLAIM_LEADERSHIP = upsert(lambda insert: insert(_LEAD).on_conflict_do_nothing())

#: The leadership ``:name``.
GET_LEADERSHIP = select(_LEAD).where(_LEAD.c.name == bindparam("name"))

#: The leadership ``:name``, its row locked until the transaction ends (PostgreSQL).
LOCK_LEADERSHIP = GET_LEADERSHIP.with_for_update()

#: Give the leadership ``:b_name`` to ``:holder_id`` until ``:expire_time``, in ``:term``.
SET_LEADERSHIP = (
    update(_LEAD)
    .where(_LEAD.c.name == bindparam("b_name"))
    .values(
        holder_id=bindparam("holder_id"),
        expire_time=bindparam("expire_time"),
        term=bindparam("term"),
    )
)

#: End the leadership ``:b_name`` at ``:expire_time``.
END_LEADERSHIP = (
    update(_LEAD)
    .where(_LEAD.c.name == bindparam("b_name"))
    .values(expire_time=bindparam("expire_time"))
)
