"""Expand: one worker id serves several classes.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01 23:20:00

``workers`` gains ``worker_classes``: every class the worker serves, ``worker_class`` first
(``[]``: that class only, which is what every worker registered before this revision means).
The column has a default and code at 0003 neither reads nor writes it, so that code runs on
this schema unchanged (its workers serve their one class, as before).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None
# Expand only: the previous release (head 0003) runs on this schema.
compatible_from = "0003"

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("workers", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("worker_classes", _JSON, nullable=False, server_default=sa.text("'[]'"))
        )


def downgrade() -> None:
    with op.batch_alter_table("workers", schema=None) as batch_op:
        batch_op.drop_column("worker_classes")
