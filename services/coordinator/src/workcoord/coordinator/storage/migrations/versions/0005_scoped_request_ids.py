"""Expand: request ids scoped to their tenant, with a fingerprint of the request; the
installation's own secrets (the page-token signing key).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30 16:30:00

Request ids were looked up across the whole installation for work coordinators, so one org's
retry could be answered with another org's work coordinator. From here on every create that
carries a request id records it in ``request_ids`` under a scope (the org, the work coordinator
or the lane it creates in) with a hash of the request body. The ids already stored are copied
in with an empty fingerprint (unknown: any body retries them). The old ``request_id`` columns
stay, still written, so code at 0003 runs on this schema unchanged.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import workcoord.coordinator.storage.schema

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None
# Expand only: the previous release (head 0003) runs on this schema.
compatible_from = "0003"

_TIME = workcoord.coordinator.storage.schema.UtcDateTime(timezone=True)

# The ids stored before this revision, each under the scope the code now looks it up in.
_BACKFILL = [
    """INSERT INTO request_ids (scope, request_id, fingerprint, resource_id, create_time)
       SELECT 'org/' || org_slug || '/work-coordinators', request_id, '',
              MIN(coordinator_id), MIN(create_time)
       FROM work_coordinators WHERE request_id <> '' GROUP BY org_slug, request_id""",
    """INSERT INTO request_ids (scope, request_id, fingerprint, resource_id, create_time)
       SELECT coordinator_id || '/lanes', request_id, '', MIN(lane_id), MIN(create_time)
       FROM lanes WHERE request_id <> '' GROUP BY coordinator_id, request_id""",
    """INSERT INTO request_ids (scope, request_id, fingerprint, resource_id, create_time)
       SELECT coordinator_id || '/grants', request_id, '', MIN(grant_id), MIN(create_time)
       FROM grants WHERE request_id <> '' GROUP BY coordinator_id, request_id""",
]


def upgrade() -> None:
    op.create_table(
        "installation_secrets",
        sa.Column("name", sa.String(length=32), nullable=False),
        sa.Column("secret", sa.String(length=128), nullable=False),
        sa.Column("create_time", _TIME, nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_installation_secrets")),
    )
    op.create_table(
        "request_ids",
        sa.Column("scope", sa.String(length=200), nullable=False),
        sa.Column("request_id", sa.String(length=128), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("resource_id", sa.String(length=64), nullable=False),
        sa.Column("create_time", _TIME, nullable=False),
        sa.PrimaryKeyConstraint("scope", "request_id", name=op.f("pk_request_ids")),
    )
    for statement in _BACKFILL:
        op.execute(statement)


def downgrade() -> None:
    op.drop_table("request_ids")
    op.drop_table("installation_secrets")
