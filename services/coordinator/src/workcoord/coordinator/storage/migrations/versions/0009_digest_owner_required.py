"""Expand and migrate: the mailer's marks, and a digest owner for every ORG work coordinator.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 20:00:00

``work_coordinators`` gains ``mail_marks`` (JSON, NULL until the first mail): what the digest
owner was last mailed — the last digest day, the last HUMAN_NEEDED revision and when — so mail
goes out once across recovery replicas and restarts.

From this release an ORG work coordinator's ``digest_owner`` is required and is an e-mail
address (the digest and the HUMAN_NEEDED mails go to it). An ORG work coordinator stored
without one gets the address of its org's first admin (the earliest ``ORG_ADMIN`` member; the
lowest user id among members made at the same moment), and a ``COORDINATOR_UPDATED`` event at
its next revision says so: ``{"fields": ["digest_owner"], "digestOwner": <address>,
"reason": "migration 0009: ..."}``. One whose org has no admin is left as it was (a later
update must then name an owner). A nullable column and data that every release reads: the
previous release runs on it unchanged. The downgrade drops the column and keeps the owners
(valid in every release) and the events (history is never rewritten).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from alembic import op

from workcoord.coordinator.storage.schema import Json, Time

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None
# Expand (a nullable column) and data: the previous release (head 0003) runs on this schema.
compatible_from = "0003"

REASON = "migration 0009: an ORG work coordinator needs a digest owner; set to the first org admin"
ACTOR = "migration:0009"


def _config(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        loaded: dict[str, Any] = json.loads(value)
        return loaded
    return dict(value or {})


def upgrade() -> None:
    with op.batch_alter_table("work_coordinators", schema=None) as batch_op:
        batch_op.add_column(sa.Column("mail_marks", Json, nullable=True))
    bind = op.get_bind()
    coordinators = bind.execute(
        sa.text(
            "SELECT coordinator_id, org_slug, revision, config, config_version "
            "FROM work_coordinators WHERE scope = 'ORG' ORDER BY coordinator_id"
        )
    ).fetchall()
    now = datetime.now(UTC)
    for coordinator_id, org_slug, current, stored, version in coordinators:
        config = _config(stored)
        if config.get("digest_owner"):
            continue
        admin = bind.execute(
            sa.text(
                "SELECT u.email FROM org_members m JOIN users u ON u.user_id = m.user_id "
                "WHERE m.org_slug = :org AND m.role = 'ORG_ADMIN' "
                "ORDER BY m.create_time, m.user_id LIMIT 1"
            ),
            {"org": org_slug},
        ).scalar()
        if not admin:
            continue
        config["digest_owner"] = admin
        revision_now = int(current) + 1
        bind.execute(
            sa.text(
                "UPDATE work_coordinators SET config = :config, config_version = :version, "
                "revision = :revision, update_time = :now WHERE coordinator_id = :id"
            ).bindparams(sa.bindparam("config", type_=Json), sa.bindparam("now", type_=Time)),
            {
                "config": config,
                "version": int(version) + 1,
                "revision": revision_now,
                "now": now,
                "id": coordinator_id,
            },
        )
        data = {"fields": ["digest_owner"], "digestOwner": admin, "reason": REASON}
        bind.execute(
            sa.text(
                "INSERT INTO events (coordinator_id, revision, type, time, lane_id, item_id, "
                "lease_id, actor, data) VALUES (:id, :revision, 'COORDINATOR_UPDATED', :now, "
                "'', '', '', :actor, :data)"
            ).bindparams(sa.bindparam("data", type_=Json), sa.bindparam("now", type_=Time)),
            {
                "id": coordinator_id,
                "revision": revision_now,
                "now": now,
                "actor": ACTOR,
                "data": data,
            },
        )


def downgrade() -> None:
    """Drop the marks; the owners stay (valid in every release) and the events stay history."""
    with op.batch_alter_table("work_coordinators", schema=None) as batch_op:
        batch_op.drop_column("mail_marks")
