"""Webhooks of a work coordinator and their deliveries (the outbox; rows are inserted by the
flush with the events: see :mod:`.bulk`)."""

from __future__ import annotations

from sqlalchemy import Integer, bindparam, delete, select

from workcoord.coordinator.domain.webhooks import DONE_DELIVERY_STATES

from ... import schema as t

_W = t.webhooks
_D = t.webhook_deliveries
_DONE = [state.value for state in DONE_DELIVERY_STATES]

#: The webhook ``:webhook_id``.
GET_WEBHOOK = select(_W).where(_W.c.webhook_id == bindparam("webhook_id"))

#: The webhooks of ``:coordinator_id`` by id.
LIST_WEBHOOKS = (
    select(_W).where(_W.c.coordinator_id == bindparam("coordinator_id")).order_by(_W.c.webhook_id)
)

#: Remove the deliveries of ``:webhook_id`` (before the webhook itself).
DELETE_DELIVERIES = delete(_D).where(_D.c.webhook_id == bindparam("webhook_id"))

#: Remove the webhook ``:webhook_id``.
DELETE_WEBHOOK = delete(_W).where(_W.c.webhook_id == bindparam("webhook_id"))

#: The delivery ``:delivery_id``.
GET_DELIVERY = select(_D).where(_D.c.delivery_id == bindparam("delivery_id"))

#: Up to ``:limit`` deliveries of ``:webhook_id`` before ``:before_revision``, newest first.
LIST_DELIVERIES = (
    select(_D)
    .where(
        _D.c.webhook_id == bindparam("webhook_id"),
        _D.c.revision < bindparam("before_revision"),
    )
    .order_by(_D.c.revision.desc())
    .limit(bindparam("limit", type_=Integer))
)

#: Up to ``:limit`` deliveries not done yet (PENDING or FAILED), by webhook then revision.
UNDONE_DELIVERIES = (
    select(_D)
    .where(_D.c.state.not_in(_DONE))
    .order_by(_D.c.webhook_id, _D.c.revision)
    .limit(bindparam("limit", type_=Integer))
)
