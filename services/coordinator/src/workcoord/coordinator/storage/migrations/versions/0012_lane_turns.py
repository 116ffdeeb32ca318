"""Expand: each lane's turn in the claim order (fair leasing).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01 19:50:00

``lanes`` gains ``served_turn``: the work coordinator's revision when one of the lane's items
was last leased (0: never). The claim orders ready items of one priority by it, so the lane
served longest ago goes next. The column has a default and code at 0003 neither reads nor
writes it, so that code runs on this schema unchanged (its claims leave the turns as they
are: first in, first out, as before).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None
# Expand only: the previous release (head 0003) runs on this schema.
compatible_from = "0003"


def upgrade() -> None:
    with op.batch_alter_table("lanes", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("served_turn", sa.BigInteger(), nullable=False, server_default=sa.text("0"))
        )


def downgrade() -> None:
    with op.batch_alter_table("lanes", schema=None) as batch_op:
        batch_op.drop_column("served_turn")
