"""Expand: tracker connections, a work coordinator's own credentials for GitHub, GitLab and
Jira (sealed with the installation key).

Revision ID: 0011
Revises: 0009
Create Date: 2026-12-01 20:00:00

A new table only: the previous release never reads it and runs on this schema unchanged.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from workcoord.coordinator.storage.schema import UtcDateTime

revision = "0011"
down_revision = "0009"
branch_labels = None
depends_on = None
# Expand only: the previous release (head 0003) runs on this schema.
compatible_from = "0003"


def upgrade() -> None:
    op.create_table(
        "tracker_connections",
        sa.Column("tracker_id", sa.String(64), nullable=False),
        sa.Column("coordinator_id", sa.String(64), nullable=False),
        sa.Column("tracker", sa.String(16), nullable=False),
        sa.Column("base_url", sa.String(2048), nullable=False),
        sa.Column(
            "projects", sa.JSON().with_variant(postgresql.JSONB(), "postgresql"), nullable=False
        ),
        sa.Column("credential_ciphertext", sa.Text(), nullable=False),
        sa.Column("credential_fingerprint", sa.String(32), nullable=False),
        sa.Column("done_status", sa.String(128), nullable=False),
        sa.Column("created_by", sa.String(140), nullable=False),
        sa.Column("last_success_time", UtcDateTime(timezone=True)),
        sa.Column("last_error", sa.Text(), nullable=False),
        sa.Column("last_error_time", UtcDateTime(timezone=True)),
        sa.Column("create_time", UtcDateTime(timezone=True), nullable=False),
        sa.Column("update_time", UtcDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("tracker_id", name=op.f("pk_tracker_connections")),
    )
    op.create_index(
        "ix_tracker_connections_coordinator",
        "tracker_connections",
        ["coordinator_id", "tracker_id"],
    )


def downgrade() -> None:
    op.drop_index("ix_tracker_connections_coordinator", table_name="tracker_connections")
    op.drop_table("tracker_connections")
