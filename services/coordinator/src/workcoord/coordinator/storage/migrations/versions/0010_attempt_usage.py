"""Expand: what attempts spend.

Revision ID: 0010
Revises: 0006
Create Date: 2026-12-01 19:50:00

``attempts`` gains ``usage`` (the running totals its worker reports: tokens, cost in
micro-dollars, model; a JSON document, NULL until the first report). The column is nullable,
so code at 0003 runs on this schema unchanged.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0010"
down_revision = "0006"
branch_labels = None
depends_on = None
# Expand only: the previous release (head 0003) runs on this schema.
compatible_from = "0003"

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("usage", _JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.drop_column("usage")
