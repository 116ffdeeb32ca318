"""Expand: worker fences, and what a retried Lease needs to answer the same leases.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 16:10:00

``attempts`` gains ``lease_request`` (a digest naming the Lease call that granted it) and
``token_nonce`` (the salt its lease token is derived from; the token itself is never stored),
with an index to find an earlier call's attempts; ``workers`` gains ``fence``. New columns have
defaults or are nullable, so code at 0003 runs on this schema unchanged.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None
# Expand only: the previous release (head 0003) runs on this schema.
compatible_from = "0003"

_LIVE_REQUEST = "lease_request <> ''"


def upgrade() -> None:
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "lease_request", sa.String(length=64), server_default=sa.text("''"), nullable=False
            )
        )
        batch_op.add_column(
            sa.Column(
                "token_nonce", sa.String(length=64), server_default=sa.text("''"), nullable=False
            )
        )
        batch_op.create_index(
            "ix_attempts_lease_request",
            ["coordinator_id", "lease_request"],
            unique=False,
            postgresql_where=sa.text(_LIVE_REQUEST),
            sqlite_where=sa.text(_LIVE_REQUEST),
        )
    with op.batch_alter_table("workers", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "fence",
                sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
                nullable=True,
            )
        )


def downgrade() -> None:
    with op.batch_alter_table("workers", schema=None) as batch_op:
        batch_op.drop_column("fence")
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.drop_index("ix_attempts_lease_request")
        batch_op.drop_column("token_nonce")
        batch_op.drop_column("lease_request")
