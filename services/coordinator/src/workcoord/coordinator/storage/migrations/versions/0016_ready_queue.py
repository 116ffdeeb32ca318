"""Expand: the ready queue (``ready_items``) replaces the partial index ``ix_items_ready``.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-05 19:30:00

``ix_items_ready`` had ``state = 'QUEUED'`` as its predicate, so every change of an item's
state (a lease, a completion, each requeue of a recovery sweep) was a non-HOT update in
PostgreSQL: a new entry in every index of ``items``. The queue moves to a narrow table, one row
per QUEUED item (class, lane, priority, sequence, held, backoff), with the claim's index; triggers on ``items`` insert
and delete its rows in the writer's transaction. The backfill copies the queued items, then the
index is dropped: no index of ``items`` names a column a transition changes any more. On
PostgreSQL ``items`` keeps half of each page free (``fillfactor`` 50, was 80) so that a
transaction moving every item of a page finds room for all the new versions there (HOT needs
the new version on the old one's page); pages written before the upgrade keep their old fill
until rewritten.

Compatibility: the triggers keep the queue for any writer, so code of the previous release
(head 0003), which writes ``items`` only and never reads ``ready_items``, runs on this schema
and leaves the queue consistent; its claim reads ``items`` by ``state`` as before, without the
dropped index (correct, slower on a deep queue while both releases run). So the floor stays
at 0003. The downgrade builds ``ix_items_ready`` again, then drops the triggers and the table.

The trigger statements are those of :mod:`workcoord.coordinator.storage.schema_queue` as of this
revision (``READY_QUEUE_TRIGGERS_0016``; 0017 replaced them). On SQLite a later ``batch_alter_table("items")`` that recreates
the table would drop these triggers: such a revision must create them again.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from workcoord.coordinator.storage.schema import UtcDateTime
from workcoord.coordinator.storage.schema_queue import (
    BACKFILL_READY_ITEMS,
    DROP_READY_QUEUE_TRIGGERS,
    READY_QUEUE_TRIGGERS_0016,
)

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None
# Expand (triggers keep the new table for old writers): the previous release (head 0003) runs.
compatible_from = "0003"


def _dialect() -> str:
    return "postgresql" if op.get_bind().dialect.name == "postgresql" else "sqlite"


def _fillfactor(percent: int) -> None:
    # Reset then set all three, in the order schema.py declares them (the catalog lists them so).
    op.execute(
        "ALTER TABLE items RESET (fillfactor, autovacuum_vacuum_scale_factor, "
        "autovacuum_analyze_scale_factor)"
    )
    op.execute(
        f"ALTER TABLE items SET (fillfactor = {percent}, autovacuum_vacuum_scale_factor = 0.02, "
        "autovacuum_analyze_scale_factor = 0.02)"
    )


def upgrade() -> None:
    op.create_table(
        "ready_items",
        sa.Column("item_id", sa.String(length=64), nullable=False),
        sa.Column("coordinator_id", sa.String(length=64), nullable=False),
        sa.Column("worker_class", sa.String(length=32), nullable=False),
        sa.Column("lane_id", sa.String(length=64), nullable=False),
        sa.Column("priority", sa.Integer(), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("held", sa.Boolean(), nullable=False),
        sa.Column("not_before", UtcDateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("item_id", name=op.f("pk_ready_items")),
        postgresql_with={
            "fillfactor": 90,
            "autovacuum_vacuum_scale_factor": 0.02,
            "autovacuum_analyze_scale_factor": 0.02,
        },
    )
    # Triggers first, then the copy, under one lock of items: no write falls between them.
    if _dialect() == "postgresql":
        op.execute("LOCK TABLE items IN SHARE ROW EXCLUSIVE MODE")
    for statement in READY_QUEUE_TRIGGERS_0016[_dialect()]:
        op.execute(statement)
    op.execute(BACKFILL_READY_ITEMS)
    op.create_index(
        "ix_ready_items_claim",
        "ready_items",
        ["coordinator_id", "worker_class", sa.text("priority DESC"), "seq"],
        unique=False,
    )
    op.drop_index("ix_items_ready", table_name="items")
    if _dialect() == "postgresql":
        _fillfactor(50)


def downgrade() -> None:
    if _dialect() == "postgresql":
        _fillfactor(80)
    op.create_index(
        "ix_items_ready",
        "items",
        ["coordinator_id", "worker_class", sa.text("priority DESC"), "seq"],
        unique=False,
        postgresql_where=sa.text("state = 'QUEUED'"),
        sqlite_where=sa.text("state = 'QUEUED'"),
    )
    for statement in DROP_READY_QUEUE_TRIGGERS[_dialect()]:
        op.execute(statement)
    op.drop_index("ix_ready_items_claim", table_name="ready_items")
    op.drop_table("ready_items")
