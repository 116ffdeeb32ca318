"""The ready queue: one narrow row per QUEUED item, which the claim reads instead of an index on
``items`` (migration 0016).

Why a table and not a partial index: an index whose predicate names ``items.state`` makes every
change of an item's state a non-HOT update in PostgreSQL, a new entry in every index of
``items`` (lease, completion, each requeue of a recovery sweep). With the queue kept here no
index of ``items`` names a column a transition changes, so those updates are HOT (the row's
new version stays on its page and no index is touched); only the items entering or leaving
the queue write (or delete) a row of this narrow table.

Triggers on ``items`` keep the queue, in the same transaction as the write, for every writer:
this release, the one before it (which knows nothing of the table) and an operator in ``psql``.
A row holds what a claim filters and orders by (class, lane, priority, sequence, held, backoff),
copied from the item: the claim ranks the queue's narrow rows (joined to their lanes for the
lane's turn) and reads ``items`` only for the few it takes.
``migrations/versions/0016_ready_queue.py`` creates the same triggers.
"""

from __future__ import annotations

from sqlalchemy import DDL, BigInteger, Boolean, Column, Index, Integer, String, Table, event

from .column_types import Id, Time, hot_storage, metadata

__all__ = [
    "BACKFILL_READY_ITEMS",
    "DROP_READY_QUEUE_TRIGGERS",
    "READY_QUEUE_TRIGGERS",
    "WRITER_KEEPS_QUEUE",
    "ready_items",
]

ready_items = Table(
    "ready_items",
    metadata,
    Column("item_id", Id, primary_key=True),
    Column("coordinator_id", Id, nullable=False),
    Column("worker_class", String(32), nullable=False),
    Column("lane_id", Id, nullable=False),
    Column("priority", Integer, nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("held", Boolean, nullable=False),
    Column("not_before", Time),
    **hot_storage(90),
)
# The claim's order within one class: highest priority first, then FIFO (what the partial
# ``ix_items_ready`` on ``items`` held before 0016).
Index(
    "ix_ready_items_claim",
    ready_items.c.coordinator_id,
    ready_items.c.worker_class,
    ready_items.c.priority.desc(),
    ready_items.c.seq,
)

_QUEUED = "'QUEUED'"
# What a queue row copies from its item: the table's columns, in their declared order.
_COLUMNS = tuple(ready_items.c.keys())
_LIST = ", ".join(_COLUMNS)
_INTO = f"INSERT INTO ready_items ({_LIST}) "
_NEW = ", ".join(f"NEW.{column}" for column in _COLUMNS)
_INSERT = f"{_INTO}VALUES ({_NEW})"
_DELETE = "DELETE FROM ready_items WHERE item_id = OLD.item_id"
_FUNCTION = "workcoord_ready_items"


def _concerns_queue(distinct: str) -> str:
    """True when an update moves the item into or out of the queue, or changes what its queue
    row copies (any other update, HOT or not, leaves the queue alone); ``distinct`` is the
    dialect's null-safe inequality."""
    columns = ("state", *_COLUMNS)
    changed = " OR ".join(f"OLD.{c} {distinct} NEW.{c}" for c in columns)
    return f"(OLD.state = {_QUEUED} OR NEW.state = {_QUEUED}) AND ({changed})"


#: A transaction setting under which the PostgreSQL update trigger stands aside: a writer that
#: moves many items at once (the recovery sweep) sets it for its one ``UPDATE`` and then
#: brings the queue up to date for those items itself, with two set statements
#: (``items:SYNC_QUEUE_DELETE``, ``items:SYNC_QUEUE_INSERT``), not a trigger call per row.
WRITER_KEEPS_QUEUE = "workcoord.writer_keeps_ready_queue"

_WHEN_UPDATE = {
    "postgresql": f"{_concerns_queue('IS DISTINCT FROM')} "
    f"AND current_setting('{WRITER_KEEPS_QUEUE}', true) IS DISTINCT FROM 'on'",
    "sqlite": _concerns_queue("IS NOT"),
}

#: The queue's triggers, by dialect, as :mod:`migrations 0016 <.migrations>` creates them (for
#: a schema made with ``metadata.create_all``). PostgreSQL: one row-level function for the
#: three events (its ``WHEN`` clauses are checked without calling it, so an update that does
#: not concern the queue costs nothing); SQLite: a trigger body per event.
READY_QUEUE_TRIGGERS: dict[str, list[str]] = {
    "postgresql": [
        f"CREATE OR REPLACE FUNCTION {_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$ "
        "BEGIN "
        f"IF TG_OP <> 'INSERT' THEN IF OLD.state = {_QUEUED} THEN {_DELETE}; END IF; END IF; "
        f"IF TG_OP <> 'DELETE' THEN IF NEW.state = {_QUEUED} THEN {_INSERT}; END IF; END IF; "
        "RETURN NULL; END $$",
        "CREATE TRIGGER trg_items_ready_insert AFTER INSERT ON items FOR EACH ROW "
        f"WHEN (NEW.state = {_QUEUED}) EXECUTE FUNCTION {_FUNCTION}()",
        "CREATE TRIGGER trg_items_ready_update AFTER UPDATE ON items FOR EACH ROW "
        f"WHEN ({_WHEN_UPDATE['postgresql']}) EXECUTE FUNCTION {_FUNCTION}()",
        "CREATE TRIGGER trg_items_ready_delete AFTER DELETE ON items FOR EACH ROW "
        f"WHEN (OLD.state = {_QUEUED}) EXECUTE FUNCTION {_FUNCTION}()",
    ],
    "sqlite": [
        "CREATE TRIGGER trg_items_ready_insert AFTER INSERT ON items "
        f"WHEN NEW.state = {_QUEUED} BEGIN {_INSERT}; END",
        "CREATE TRIGGER trg_items_ready_update AFTER UPDATE ON items "
        f"WHEN {_WHEN_UPDATE['sqlite']} BEGIN {_DELETE}; "
        f"{_INTO}SELECT {_NEW} WHERE NEW.state = {_QUEUED}; END",
        "CREATE TRIGGER trg_items_ready_delete AFTER DELETE ON items "
        f"WHEN OLD.state = {_QUEUED} BEGIN {_DELETE}; END",
    ],
}

#: Dropping them again (the downgrade of 0016).
DROP_READY_QUEUE_TRIGGERS: dict[str, list[str]] = {
    "postgresql": [
        *(
            f"DROP TRIGGER IF EXISTS trg_items_ready_{verb} ON items"
            for verb in ("insert", "update", "delete")
        ),
        f"DROP FUNCTION IF EXISTS {_FUNCTION}()",
    ],
    "sqlite": [
        f"DROP TRIGGER IF EXISTS trg_items_ready_{verb}" for verb in ("insert", "update", "delete")
    ],
}

#: Fill the queue from ``items`` (the migration's backfill).
BACKFILL_READY_ITEMS = f"{_INTO}SELECT {_LIST} FROM items WHERE state = {_QUEUED}"  # noqa: S608

for _dialect, _statements in READY_QUEUE_TRIGGERS.items():
    for _statement in _statements:
        event.listen(
            metadata,
            "after_create",
            DDL(_statement).execute_if(dialect=_dialect),  # type: ignore[no-untyped-call]
        )
