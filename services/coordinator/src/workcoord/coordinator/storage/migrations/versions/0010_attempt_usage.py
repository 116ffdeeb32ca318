"""Expand: what attempts spend, and its roll-ups.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01 19:50:00

``attempts`` gains ``usage`` (the running totals its worker reports: tokens, cost in
micro-dollars, model; a JSON document, NULL until the first report). ``usage_totals`` holds
the roll-ups per work coordinator, scope (COORDINATOR, LANE, ITEM, WORKER_CLASS, MODEL), key
and UTC day ("" for all time), added to in each worker write's transaction. The column is
nullable and the table new, so code at 0003 runs on this schema unchanged.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None
# Expand only: the previous release (head 0003) runs on this schema.
compatible_from = "0003"

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


_TOTALS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cost_micros",
)


def upgrade() -> None:
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("usage", _JSON, nullable=True))
    op.create_table(
        "usage_totals",
        sa.Column("coordinator_id", sa.String(length=64), nullable=False),
        sa.Column("scope", sa.String(length=16), nullable=False),
        sa.Column("key", sa.String(length=128), nullable=False),
        sa.Column("day", sa.String(length=10), nullable=False),
        *(sa.Column(name, sa.BigInteger(), nullable=False) for name in _TOTALS),
        sa.PrimaryKeyConstraint(
            "coordinator_id", "scope", "day", "key", name=op.f("pk_usage_totals")
        ),
    )


def downgrade() -> None:
    op.drop_table("usage_totals")
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.drop_column("usage")
