"""Expand: the ready queue holds its lanes' turns, and its claim index the whole claim order.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-05 22:00:00

Since lane turns (0012) the claim orders by ``priority DESC, lanes.served_turn, seq``; no index
gave that order, so a claim joined every queued row of the class to its lane and sorted them
all (O(queue) per claim). ``ready_items`` gains ``served_turn`` (its lane's) and
``ix_ready_items_claim`` becomes ``(coordinator_id, worker_class, priority DESC, served_turn,
seq)``: the claim walks the index and stops at its ``LIMIT``. ``ix_ready_items_lane`` finds a
lane's queue rows. The triggers on ``items`` are replaced by ones that write the lane's turn
with the queue row (``schema_queue.READY_QUEUE_TRIGGERS``), and two more keep the column for
writers that do not (``schema_queue.QUEUE_TURN_TRIGGERS``): a queue row written without a turn
(the server default -1) takes its lane's; a change of a lane's ``served_turn`` is copied to the
lane's queue rows. The backfill copies each lane's turn to its rows, under a lock of ``items``
and ``lanes`` so that no write falls between the triggers and the copy.

Compatibility: the triggers keep the column for any writer (a release before this one writes
``items`` and ``lanes.served_turn`` only, or inserts queue rows without a turn), so the floor
stays at 0003. The downgrade drops the triggers, puts 0016's triggers on ``items`` back, drops
the indexes and the column and builds 0016's index again. On SQLite a later ``batch_alter_table("lanes")`` or ``("ready_items")`` that
recreates the table would drop these triggers: such a revision must create them again.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from workcoord.coordinator.storage.schema_queue import (
    DROP_QUEUE_TURN_TRIGGERS,
    DROP_READY_QUEUE_TRIGGERS,
    QUEUE_TURN_TRIGGERS,
    READY_QUEUE_TRIGGERS,
    READY_QUEUE_TRIGGERS_0016,
    UNKNOWN_TURN,
)

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None
# Expand (triggers keep the new column for old writers): the previous release (head 0003) runs.
compatible_from = "0003"

# Each queue row's lane's turn (a correlated subquery: the same statement on both dialects).
_BACKFILL_TURNS = (
    "UPDATE ready_items SET served_turn = COALESCE("
    "(SELECT served_turn FROM lanes WHERE lanes.lane_id = ready_items.lane_id), 0)"
)


def _dialect() -> str:
    return "postgresql" if op.get_bind().dialect.name == "postgresql" else "sqlite"


def upgrade() -> None:
    if _dialect() == "postgresql":
        op.execute("LOCK TABLE items, lanes IN SHARE ROW EXCLUSIVE MODE")
    op.add_column(
        "ready_items",
        sa.Column(
            "served_turn",
            sa.BigInteger(),
            nullable=False,
            server_default=sa.text(f"{UNKNOWN_TURN}"),
        ),
    )
    for statement in (
        *DROP_READY_QUEUE_TRIGGERS[_dialect()],
        *READY_QUEUE_TRIGGERS[_dialect()],
        *QUEUE_TURN_TRIGGERS[_dialect()],
    ):
        op.execute(statement)
    op.execute(_BACKFILL_TURNS)
    op.drop_index("ix_ready_items_claim", table_name="ready_items")
    op.create_index(
        "ix_ready_items_claim",
        "ready_items",
        ["coordinator_id", "worker_class", sa.text("priority DESC"), "served_turn", "seq"],
        unique=False,
    )
    op.create_index("ix_ready_items_lane", "ready_items", ["lane_id"], unique=False)


def downgrade() -> None:
    # 0016's triggers on items name no turn: back before the column goes (SQLite refuses to
    # drop a column a trigger names).
    for statement in (
        *DROP_QUEUE_TURN_TRIGGERS[_dialect()],
        *DROP_READY_QUEUE_TRIGGERS[_dialect()],
        *READY_QUEUE_TRIGGERS_0016[_dialect()],
    ):
        op.execute(statement)
    op.drop_index("ix_ready_items_lane", table_name="ready_items")
    op.drop_index("ix_ready_items_claim", table_name="ready_items")
    op.create_index(
        "ix_ready_items_claim",
        "ready_items",
        ["coordinator_id", "worker_class", sa.text("priority DESC"), "seq"],
        unique=False,
    )
    # In place (SQLite 3.35+): a batch copy of the table would trip over the triggers on
    # ``items``, which name it.
    op.drop_column("ready_items", "served_turn")
