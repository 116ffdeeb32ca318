"""Expand-compatible: one index fewer on ``items`` (``ix_items_lane`` is dropped).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 20:00:00

Every change of an item's ``state`` is a non-HOT update in PostgreSQL (``state`` is in the
predicate of ``ix_items_ready``), so it writes a new entry into every index of ``items``. A
lease, a completion and every requeue of a recovery sweep pay that. ``ix_items_lane``
(``lane_id, seq``) duplicated what ``uq_items_lane_id_key`` (``lane_id, key``) already finds:
the items of a lane. Their order by ``seq`` is now a sort of one lane's rows (a lane holds a
bounded number of items), and each item transition writes three index entries instead of
four. No code reads the index by name, so code at 0003 runs on this schema unchanged; the
downgrade builds the index again.
"""

from __future__ import annotations

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None
# Code of the previous release does not depend on the dropped index.
compatible_from = "0003"


def upgrade() -> None:
    with op.batch_alter_table("items", schema=None) as batch_op:
        batch_op.drop_index("ix_items_lane")


def downgrade() -> None:
    with op.batch_alter_table("items", schema=None) as batch_op:
        batch_op.create_index("ix_items_lane", ["lane_id", "seq"], unique=False)
