"""An in-memory implementation of the storage port, for fast unit tests of the domain.

Plain dictionaries, no I/O, with the semantics of the SQL store method by method (the contract
suite in ``tests/contract`` runs the same cases on both): the same filters and orderings, the
exclusive-holds table, upserts, leadership, and the same errors for the constraints the schema
enforces (through :mod:`..integrity`). Write transactions are serialised by one lock (as
SQLite's ``BEGIN IMMEDIATE`` does) and work on a copy-on-write snapshot that replaces the
committed state only when the transaction body returns, so an exception anywhere inside
``write()`` rolls back everything. Readers see the state committed when they opened.

Records are copied on the way in and on the way out: the engine mutates what it reads and a
change it does not write back must be lost here exactly as it is in the database.
"""

from __future__ import annotations

from ._base import ReadOnlyViolation
from .store import MemoryStore, MemoryTx

__all__ = ["MemoryStore", "MemoryTx", "ReadOnlyViolation"]
