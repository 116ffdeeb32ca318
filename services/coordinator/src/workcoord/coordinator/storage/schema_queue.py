"""The ready queue: one narrow row per QUEUED item, which the claim reads instead of an index on
``items`` (migration 0016), with its lane's turn (migration 0017).

Why a table and not a partial index: an index whose predicate names ``items.state`` makes every
change of an item's state a non-HOT update in PostgreSQL, a new entry in every index of
``items`` (lease, completion, each requeue of a recovery sweep). With the queue kept here no
index of ``items`` names a column a transition changes, so those updates are HOT (the row's
new version stays on its page and no index is touched); only the items entering or leaving
the queue write (or delete) a row of this narrow table.

Triggers on ``items`` keep the queue, in the same transaction as the write, for every writer:
this release, the ones before it (which know nothing of the table or of its turn) and an
operator in ``psql``. A row holds what a claim filters and orders by (class, lane, priority,
sequence, held, backoff), copied from the item, and its lane's ``served_turn``, read from
``lanes`` as the row is written (a row written without it by an older writer, the default -1,
takes it from a trigger on ``ready_items``); a trigger on ``lanes`` copies a lane's new turn to
all its queue rows when a claim serves it. So the claim's whole order (priority, the lane's
turn, sequence) is one index of this table, walked from its start and stopped at the claim's
``LIMIT``: a claim costs the same on a queue of a thousand items or of a million. The price: a
claim rewrites the queue rows of the lanes it served (a lane's queued items, about 100 in B1).
``migrations/versions/0016_ready_queue.py`` and ``0017_queue_turns.py`` create the triggers.
"""

from __future__ import annotations

from sqlalchemy import (
    DDL,
    BigInteger,
    Boolean,
    Column,
    Index,
    Integer,
    String,
    Table,
    event,
    text,
)

from .column_types import Id, Time, hot_storage, metadata

__all__ = [
    "BACKFILL_READY_ITEMS",
    "DROP_QUEUE_TURN_TRIGGERS",
    "DROP_READY_QUEUE_TRIGGERS",
    "QUEUE_TURN_TRIGGERS",
    "READY_QUEUE_TRIGGERS",
    "READY_QUEUE_TRIGGERS_0016",
    "UNKNOWN_TURN",
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
    # The lane's turn (``lanes.served_turn``), kept by the triggers of QUEUE_TURN_TRIGGERS.
    Column("served_turn", BigInteger, nullable=False, server_default=text("-1")),
    **hot_storage(90),
)
# The claim's whole order within one class: highest priority first, then the lane served
# longest ago, then FIFO (0017; 0016's index lacked the turn, so the claim sorted the queue).
Index(
    "ix_ready_items_claim",
    ready_items.c.coordinator_id,
    ready_items.c.worker_class,
    ready_items.c.priority.desc(),
    ready_items.c.served_turn,
    ready_items.c.seq,
)
# A lane's queue rows: where a claim copies the lane's new turn.
Index("ix_ready_items_lane", ready_items.c.lane_id)

#: ``ready_items.served_turn`` of a row written without it (by the triggers on ``items``, the
#: same since 0016): the trigger on ``ready_items`` replaces it with its lane's turn.
UNKNOWN_TURN = -1

_QUEUED = "'QUEUED'"
# What a queue row copies from its item: the table's columns but the lane's turn, in their
# declared order (as in 0016: the triggers on ``items`` write these).
_COLUMNS = tuple(c.name for c in ready_items.c if c.name != "served_turn")
_LIST = ", ".join(_COLUMNS)
_INTO = f"INSERT INTO ready_items ({_LIST}) "
_NEW = ", ".join(f"NEW.{column}" for column in _COLUMNS)
# The lane's turn as a queue row is written (a lane gone, which SQLite's unenforced foreign key
# allows, reads as never served).
_LANE_TURN = "COALESCE((SELECT served_turn FROM lanes WHERE lane_id = NEW.lane_id), 0)"
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


def _items_triggers(with_turn: bool) -> dict[str, list[str]]:
    """The triggers on ``items`` that keep the queue, by dialect; ``with_turn``: the queue row
    is written with its lane's turn (0017; 0016's rows had no turn)."""
    into, new = _INTO, _NEW
    # plpgsql keeps a statement's plan for the session: see QUEUE_TURN_TRIGGERS.
    settings = ""
    if with_turn:
        into = f"INSERT INTO ready_items ({_LIST}, served_turn) "
        new = f"{_NEW}, {_LANE_TURN}"
        settings = "SET enable_seqscan = off "
    insert = f"{into}VALUES ({new})"
    return {
        "postgresql": [
            f"CREATE OR REPLACE FUNCTION {_FUNCTION}() RETURNS trigger LANGUAGE plpgsql "
            f"{settings}AS $$ BEGIN "
            f"IF TG_OP <> 'INSERT' THEN IF OLD.state = {_QUEUED} THEN {_DELETE}; END IF; END IF; "
            f"IF TG_OP <> 'DELETE' THEN IF NEW.state = {_QUEUED} THEN {insert}; END IF; END IF; "
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
            f"WHEN NEW.state = {_QUEUED} BEGIN {insert}; END",
            "CREATE TRIGGER trg_items_ready_update AFTER UPDATE ON items "
            f"WHEN {_WHEN_UPDATE['sqlite']} BEGIN {_DELETE}; "
            f"{into}SELECT {new} WHERE NEW.state = {_QUEUED}; END",
            "CREATE TRIGGER trg_items_ready_delete AFTER DELETE ON items "
            f"WHEN OLD.state = {_QUEUED} BEGIN {_DELETE}; END",
        ],
    }


#: The queue's triggers on ``items``, by dialect, as migration 0017 creates them (for a schema
#: made with ``metadata.create_all``): each queue row written with its lane's turn.
#: PostgreSQL: one row-level function for the three events (its ``WHEN`` clauses are checked
#: without calling it, so an update that does not concern the queue costs nothing); SQLite: a
#: trigger body per event.
READY_QUEUE_TRIGGERS = _items_triggers(with_turn=True)

#: The same as migration 0016 created them (and 0017's downgrade restores): rows without a turn.
READY_QUEUE_TRIGGERS_0016 = _items_triggers(with_turn=False)

_TURN_FUNCTION = "workcoord_ready_items_turn"
_FILL_FUNCTION = "workcoord_ready_items_fill_turn"
_FILL_TURN = f"UPDATE ready_items SET served_turn = {_LANE_TURN} WHERE item_id = NEW.item_id"  # noqa: S608
_COPY_TURN = "UPDATE ready_items SET served_turn = NEW.served_turn WHERE lane_id = NEW.lane_id"

#: The triggers that keep ``ready_items.served_turn`` equal to its lane's for writers that do not
#: write it (migration 0017), by dialect: a queue row written without the turn (the default,
#: ``UNKNOWN_TURN``: by 0016's triggers on ``items`` or a release before 0017) takes its lane's;
#: a change of a lane's ``served_turn`` (a claim's ``mark_lanes_served``) is copied to the
#: lane's queue rows. Claims of one work coordinator hold its lock, so two never rewrite one
#: lane's rows at once.
#:
#: On PostgreSQL these functions and the one on ``items`` run with ``enable_seqscan`` off:
#: plpgsql keeps a statement's plan for the session, and a plan made while ``lanes`` or
#: ``ready_items`` was small (or its statistics stale, as after a bulk load) scans the whole
#: table by each key, once per queue row written or lane served: 50,000 items copied into 500
#: new lanes took 7-8 s instead of about 2.
QUEUE_TURN_TRIGGERS: dict[str, list[str]] = {
    "postgresql": [
        f"CREATE OR REPLACE FUNCTION {_FILL_FUNCTION}() RETURNS trigger LANGUAGE plpgsql "
        f"SET enable_seqscan = off AS $$ BEGIN NEW.served_turn := {_LANE_TURN}; RETURN NEW; END $$",
        "CREATE TRIGGER trg_ready_items_turn BEFORE INSERT ON ready_items FOR EACH ROW "
        f"WHEN (NEW.served_turn = {UNKNOWN_TURN}) EXECUTE FUNCTION {_FILL_FUNCTION}()",
        f"CREATE OR REPLACE FUNCTION {_TURN_FUNCTION}() RETURNS trigger LANGUAGE plpgsql "
        f"SET enable_seqscan = off AS $$ BEGIN {_COPY_TURN}; RETURN NULL; END $$",
        "CREATE TRIGGER trg_lanes_ready_turn AFTER UPDATE OF served_turn ON lanes FOR EACH ROW "
        f"WHEN (OLD.served_turn IS DISTINCT FROM NEW.served_turn) "
        f"EXECUTE FUNCTION {_TURN_FUNCTION}()",
    ],
    # SQLite: no BEFORE trigger may change the row; the row is corrected right after.
    "sqlite": [
        "CREATE TRIGGER trg_ready_items_turn AFTER INSERT ON ready_items "
        f"WHEN NEW.served_turn = {UNKNOWN_TURN} BEGIN {_FILL_TURN}; END",
        "CREATE TRIGGER trg_lanes_ready_turn AFTER UPDATE OF served_turn ON lanes "
        f"WHEN OLD.served_turn IS NOT NEW.served_turn BEGIN {_COPY_TURN}; END",
    ],
}

#: Dropping them again (the downgrade of 0017).
DROP_QUEUE_TURN_TRIGGERS: dict[str, list[str]] = {
    "postgresql": [
        "DROP TRIGGER IF EXISTS trg_lanes_ready_turn ON lanes",
        "DROP TRIGGER IF EXISTS trg_ready_items_turn ON ready_items",
        f"DROP FUNCTION IF EXISTS {_TURN_FUNCTION}()",
        f"DROP FUNCTION IF EXISTS {_FILL_FUNCTION}()",
    ],
    "sqlite": [
        "DROP TRIGGER IF EXISTS trg_lanes_ready_turn",
        "DROP TRIGGER IF EXISTS trg_ready_items_turn",
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

#: Fill the queue from ``items`` (0016's backfill: its rows had no turn).
BACKFILL_READY_ITEMS = f"{_INTO}SELECT {_LIST} FROM items WHERE state = {_QUEUED}"  # noqa: S608

for _dialect in READY_QUEUE_TRIGGERS:
    for _statement in (*READY_QUEUE_TRIGGERS[_dialect], *QUEUE_TURN_TRIGGERS[_dialect]):
        event.listen(
            metadata,
            "after_create",
            DDL(_statement).execute_if(dialect=_dialect),  # type: ignore[no-untyped-call]
        )
