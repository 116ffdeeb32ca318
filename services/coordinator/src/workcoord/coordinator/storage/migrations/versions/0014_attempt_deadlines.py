"""Expand: attempt deadlines (``max_run_duration``).

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01 23:20:00

``items`` gains ``max_run_seconds`` (the item's own bound on one attempt; NULL: the work
coordinator's default for the item's class) and ``attempts`` gains ``deadline_time`` (when the
attempt must wind down, fixed when it is leased; NULL: no deadline). Both are nullable, so code
at 0003 runs on this schema unchanged.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from workcoord.coordinator.storage.schema import UtcDateTime

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None
# Expand only: the previous release (head 0003) runs on this schema.
compatible_from = "0003"


def upgrade() -> None:
    with op.batch_alter_table("items", schema=None) as batch_op:
        batch_op.add_column(sa.Column("max_run_seconds", sa.Integer(), nullable=True))
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("deadline_time", UtcDateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.drop_column("deadline_time")
    with op.batch_alter_table("items", schema=None) as batch_op:
        batch_op.drop_column("max_run_seconds")
