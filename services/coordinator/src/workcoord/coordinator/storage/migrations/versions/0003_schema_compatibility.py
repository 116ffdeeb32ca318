"""Expand: record which releases can run on each schema revision.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30 12:00:00

From this revision on, ``migrations/env.py`` writes every applied revision's
``compatible_from`` into ``workcoord_schema_compatibility``, so a release started on a newer
schema can tell whether that schema admits it. This revision only adds a table the domain never
reads, so code at 0002 runs on it unchanged.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None
# Expand only: the previous release (head 0002) runs on this schema.
compatible_from = "0002"

# The floors of the revisions applied before the table existed (their own declarations).
_EARLIER = {"0001": "0001", "0002": "0002"}


def upgrade() -> None:
    table = op.create_table(
        "workcoord_schema_compatibility",
        sa.Column("revision", sa.String(length=32), nullable=False),
        sa.Column("compatible_from", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("revision", name=op.f("pk_workcoord_schema_compatibility")),
    )
    op.bulk_insert(
        table,
        [{"revision": rev, "compatible_from": floor} for rev, floor in _EARLIER.items()],
    )


def downgrade() -> None:
    op.drop_table("workcoord_schema_compatibility")
