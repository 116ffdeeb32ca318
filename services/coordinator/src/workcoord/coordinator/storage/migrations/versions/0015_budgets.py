"""Expand: budgets (a work coordinator's day budget, a lane's lifetime budget).

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-05 19:20:00

``work_coordinators`` gains ``budget`` (JSON ``{"cost_micros", "tokens"}`` per UTC day; NULL:
none) and ``lane_budgets`` (whether any of its lanes was ever given a budget; false), ``lanes``
gains ``budget`` (JSON, the lane's lifetime limits; NULL: none). All are nullable or have a
server default, so code at 0003 runs on this schema unchanged.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from workcoord.coordinator.storage.schema import Json

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None
# Expand only: the previous release (head 0003) runs on this schema.
compatible_from = "0003"


def upgrade() -> None:
    with op.batch_alter_table("work_coordinators", schema=None) as batch_op:
        batch_op.add_column(sa.Column("budget", Json, nullable=True))
        batch_op.add_column(
            sa.Column("lane_budgets", sa.Boolean(), nullable=False, server_default=sa.text("false"))
        )
    with op.batch_alter_table("lanes", schema=None) as batch_op:
        batch_op.add_column(sa.Column("budget", Json, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("lanes", schema=None) as batch_op:
        batch_op.drop_column("budget")
    with op.batch_alter_table("work_coordinators", schema=None) as batch_op:
        batch_op.drop_column("lane_budgets")
        batch_op.drop_column("budget")
