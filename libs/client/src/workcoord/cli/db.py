"""``workcoord db upgrade|current``: the coordinator's schema migrations (Alembic)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

from workcoord.cli.common import EXIT_OK, EXIT_USAGE, CliError
from workcoord.cli.serve import import_attribute

__all__ = ["register"]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``db upgrade|current``."""
    db = commands.add_parser("db", help="database migrations")
    sub = db.add_subparsers(dest="db_command", metavar="COMMAND", required=True)
    upgrade = sub.add_parser("upgrade", help="migrate the schema to the latest revision")
    upgrade.set_defaults(handler=_upgrade)
    current = sub.add_parser("current", help="print the schema revision (or 'none')")
    current.set_defaults(handler=_current)
    for parser in (upgrade, current):
        parser.add_argument(
            "--database-url", default=None, help="default: the DATABASE_URL variable"
        )


def _database_url(args: argparse.Namespace) -> str:
    url: str | None = args.database_url or os.environ.get("DATABASE_URL") or None
    if not url:
        raise CliError("no database: pass --database-url or set DATABASE_URL", EXIT_USAGE)
    return url


def _migrate(function: str) -> Callable[[str], Any]:
    migrate: Callable[[str], Any] = import_attribute(
        "workcoord.coordinator.storage.migrate", function, "workcoord-coordinator"
    )
    return migrate


def _upgrade(args: argparse.Namespace) -> int:
    url = _database_url(args)
    _migrate("upgrade")(url)
    revision = _migrate("current")(url)
    print(f"database at revision {revision or 'none'}")
    return EXIT_OK


def _current(args: argparse.Namespace) -> int:
    revision = _migrate("current")(_database_url(args))
    print(revision or "none")
    return EXIT_OK
