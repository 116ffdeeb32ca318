"""``storage/schema.py`` says exactly what the migrations build, on both dialects.

Two checks on a freshly migrated database: Alembic's own comparison with the MetaData (types and
server defaults included) finds nothing, and the database's catalog (columns, constraints,
indexes with their predicates and sort orders, table storage parameters) is the same as that
of a database made from the MetaData directly. The second covers what Alembic does not compare:
partial-index predicates, and on SQLite the sort order inside an index.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import AsyncIterator
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from tests.support.databases import PostgresDatabases, SqliteDatabases
from workcoord.coordinator.storage.migrate import upgrade_async
from workcoord.coordinator.storage.schema import metadata

Catalog = dict[str, set[tuple[Any, ...]]]

_PG_CATALOG = {
    "columns": """
        SELECT table_name, column_name, data_type, character_maximum_length, is_nullable,
               column_default
        FROM information_schema.columns
        WHERE table_schema = 'public' AND table_name <> 'alembic_version'""",
    "constraints": """
        SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid)
        FROM pg_constraint
        WHERE connamespace = 'public'::regnamespace
          AND conrelid::regclass::text <> 'alembic_version'""",
    "indexes": """
        SELECT tablename, indexname, indexdef FROM pg_indexes
        WHERE schemaname = 'public' AND tablename <> 'alembic_version'""",
    "triggers": """
        SELECT tgrelid::regclass::text, tgname, pg_get_triggerdef(oid) FROM pg_trigger
        WHERE NOT tgisinternal""",
    "storage parameters": """
        SELECT relname, array_to_string(reloptions, ',') FROM pg_class
        WHERE relnamespace = 'public'::regnamespace AND relkind = 'r'
          AND relname <> 'alembic_version'""",
}


def _differences(connection: Connection) -> list[Any]:
    context = MigrationContext.configure(
        connection, opts={"compare_type": True, "compare_server_default": True}
    )
    return list(compare_metadata(context, metadata))


def _pg_catalog(connection: Connection) -> Catalog:
    return {
        part: {tuple(row) for row in connection.execute(text(query))}
        for part, query in _PG_CATALOG.items()
    }


def _sqlite_catalog(connection: Connection) -> Catalog:
    def rows(statement: str) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in connection.exec_driver_sql(statement)]

    tables = [
        name
        for (name,) in rows("SELECT name FROM sqlite_master WHERE type = 'table'")
        if name != "alembic_version" and not name.startswith("sqlite_")
    ]
    catalog: Catalog = {
        "columns": set(),
        "foreign keys": set(),
        "indexes": set(),
        "triggers": set(),
    }
    catalog["triggers"] = set(rows("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'"))
    for table in tables:
        for _cid, name, kind, notnull, default, pk in rows(f'PRAGMA table_info("{table}")'):
            catalog["columns"].add((table, name, kind, notnull, default, pk))
        for fk in rows(f'PRAGMA foreign_key_list("{table}")'):
            catalog["foreign keys"].add((table, *fk[2:]))
        for _seq, name, unique, origin, partial in rows(f'PRAGMA index_list("{table}")'):
            keys = tuple(
                (column, desc, collation)
                for _n, _cid, column, desc, collation, key in rows(f'PRAGMA index_xinfo("{name}")')
                if key
            )
            # SQLite numbers the indexes of inline constraints itself: name those by columns.
            label = "" if name.startswith("sqlite_autoindex_") else name
            catalog["indexes"].add((table, label, unique, origin, partial, keys))
    for name, sql in rows("SELECT name, sql FROM sqlite_master WHERE type = 'index'"):
        if sql is not None:  # the partial-index predicate lives only in the statement
            catalog["indexes"].add((name, re.sub(r"\s+", " ", sql.replace('"', ""))))
    return catalog


@pytest.fixture
async def migrated_and_declared(
    backend: str, pg_databases: PostgresDatabases, sqlite_databases: SqliteDatabases
) -> AsyncIterator[tuple[str, str]]:
    """Two empty databases: one migrated to head, one made from the MetaData."""
    if backend == "postgres":
        migrated = await pg_databases.create_empty("migrated")
        declared = await pg_databases.create_empty("declared")
    else:
        migrated, declared = (
            f"sqlite+aiosqlite:///{sqlite_databases.directory}/{label}-{secrets.token_hex(4)}.db"
            for label in ("migrated", "declared")
        )
    await upgrade_async(migrated)
    engine = create_async_engine(declared)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(metadata.create_all)
    finally:
        await engine.dispose()
    yield migrated, declared
    if backend == "postgres":
        for url in (migrated, declared):
            await pg_databases.drop(url)


async def test_the_migrations_build_exactly_what_schema_py_declares(
    backend: str, migrated_and_declared: tuple[str, str]
) -> None:
    catalogs: list[Catalog] = []
    for url in migrated_and_declared:
        engine = create_async_engine(url)
        try:
            async with engine.connect() as conn:
                assert await conn.run_sync(_differences) == []
                read = _pg_catalog if backend == "postgres" else _sqlite_catalog
                catalogs.append(await conn.run_sync(read))
        finally:
            await engine.dispose()
    migrated, declared = catalogs
    # The probe reads real catalogs (it would compare two empty sets otherwise).
    assert any(
        "ix_ready_items_claim" in str(row) and "DESC" in str(row) for row in migrated["indexes"]
    )
    assert any("trg_items_ready_update" in str(row) for row in migrated["triggers"])
    for part in declared:
        assert migrated[part] - declared[part] == set(), f"{part}: only the migrations make these"
        assert declared[part] - migrated[part] == set(), f"{part}: only schema.py declares these"
