"""``workcoord db upgrade|current|backup|restore``: the coordinator's database.

Every command takes the database as ``--database-url`` (default ``$DATABASE_URL``) or, for the
embedded mode, ``--state-dir`` (the folder ``workcoord dev`` uses). ``upgrade`` of an existing
embedded database first takes a backup into ``<state-dir>/backups/``; ``restore`` is for the
embedded mode only and refuses while a server holds the folder (PostgreSQL: deploy/RUNBOOK.md).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from workcoord.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    add_command_group,
)
from workcoord.cli.serve import import_attribute
from workcoord.cli.state_lock import hold_state_lock
from workcoord.kit.startup import StartupError

__all__ = ["DATABASE_FILE", "register", "upgrade_database"]

DATABASE_FILE = "workcoord.db"


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``db upgrade|current|backup|restore``."""
    sub = add_command_group(
        commands, "db_command", "db", help="database migrations, backup and restore"
    )
    upgrade = sub.add_parser(
        "upgrade",
        help="migrate the schema to the latest revision (an embedded database is backed up first)",
    )
    upgrade.set_defaults(handler=_upgrade)
    current = sub.add_parser("current", help="print the schema revision (or 'none')")
    current.set_defaults(handler=_current)
    backup = sub.add_parser(
        "backup",
        help="SQLite: an online snapshot (mode 0600); PostgreSQL: pg_dump --format=custom",
    )
    backup.add_argument(
        "--output",
        type=Path,
        default=None,
        help="where to write it (default: <state-dir>/backups/workcoord-<UTC time>.db, "
        "or ./workcoord-<UTC time>.dump for PostgreSQL); never overwritten",
    )
    backup.set_defaults(handler=_backup)
    restore = sub.add_parser(
        "restore",
        help="replace the embedded database with a backup (refuses while workcoord dev runs)",
    )
    restore.add_argument("backup_file", type=Path, metavar="BACKUP", help="a `db backup` file")
    restore.set_defaults(handler=_restore)
    for parser in (upgrade, current, backup, restore):
        where = parser.add_mutually_exclusive_group()
        where.add_argument(
            "--database-url", default=None, help="default: the DATABASE_URL variable"
        )
        where.add_argument(
            "--state-dir", type=Path, default=None, help="the embedded mode's state folder"
        )


def _database_url(args: argparse.Namespace) -> str:
    if args.state_dir is not None:
        return _sqlite_url(args.state_dir)
    url: str | None = args.database_url or os.environ.get("DATABASE_URL") or None
    if not url:
        raise CliError(
            "no database: pass --database-url or --state-dir, or set DATABASE_URL", EXIT_USAGE
        )
    return url


def _sqlite_url(state_dir: Path) -> str:
    return f"sqlite+aiosqlite:///{(state_dir / DATABASE_FILE).resolve()}"


def _coordinator(module: str, name: str) -> Any:
    return import_attribute(
        f"workcoord.coordinator.storage.{module}", name, "workcoord-coordinator"
    )


@contextmanager
def _embedded_lock(url: str) -> Iterator[None]:
    """The state folder's lock when ``url`` is the database of a state folder (``workcoord.db``
    as ``workcoord dev`` keeps it); other SQLite files have no folder lock to honour."""
    path: Path | None = _coordinator("backup", "sqlite_path")(url)
    if path is None or path.name != DATABASE_FILE or not path.parent.is_dir():
        yield
        return
    with hold_state_lock(path.parent):
        yield


def upgrade_database(url: str) -> Path | None:
    """Migrate ``url`` to the latest revision; an existing SQLite database is backed up first.

    Returns the backup's path (None when nothing needed one). The caller holds the state lock.
    """
    backup_path: Path | None = None
    path: Path | None = _coordinator("backup", "sqlite_path")(url)
    if path is not None and path.is_file():
        revision = _coordinator("migrate", "current")(url)
        # Only a schema behind this release is migrated (a newer one is left as it is).
        if revision in _coordinator("migrate", "known_revisions")()[:-1]:
            target = _coordinator("backup", "default_backup_path")(url, f"pre-upgrade-{revision}")
            backup_path = _coordinator("backup", "backup")(url, target)
    _coordinator("migrate", "upgrade")(url)
    return backup_path


def _upgrade(args: argparse.Namespace) -> int:
    url = _database_url(args)
    try:
        with _embedded_lock(url):
            saved = upgrade_database(url)
    except StartupError as exc:
        raise CliError(f"db upgrade: {exc}") from None
    if saved is not None:
        print(f"backed up the database to {saved}")
    revision = _coordinator("migrate", "current")(url)
    print(f"database at revision {revision or 'none'}")
    return EXIT_OK


def _current(args: argparse.Namespace) -> int:
    try:
        revision = _coordinator("migrate", "current")(_database_url(args))
    except StartupError as exc:
        raise CliError(f"db current: {exc}") from None
    print(revision or "none")
    return EXIT_OK


def _backup(args: argparse.Namespace) -> int:
    url = _database_url(args)
    try:
        output = args.output or _coordinator("backup", "default_backup_path")(url)
        written: Path = _coordinator("backup", "backup")(url, output)
    except StartupError as exc:
        raise CliError(f"db backup: {exc}") from None
    print(f"backed up the database to {written}")
    return EXIT_OK


def _restore(args: argparse.Namespace) -> int:
    url = _database_url(args)
    path: Path | None = _coordinator("backup", "sqlite_path")(url)
    if path is None:
        raise CliError(
            "db restore is for the embedded database (--state-dir); restore PostgreSQL with "
            "pg_restore as deploy/RUNBOOK.md describes",
            EXIT_USAGE,
        )
    try:
        _coordinator("backup", "snapshot_revision")(args.backup_file)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with hold_state_lock(path.parent):
            if path.is_file():
                target = _coordinator("backup", "default_backup_path")(url, "pre-restore")
                saved = _coordinator("backup", "backup")(url, target)
                print(f"kept the replaced database in {saved}")
            revision = _coordinator("backup", "restore_sqlite")(args.backup_file, path)
    except StartupError as exc:
        raise CliError(f"db restore: {exc}") from None
    print(f"restored {path} from {args.backup_file} (schema revision {revision})")
    if revision != _coordinator("migrate", "head")():
        print("the backup's schema is older than this release: `workcoord dev` migrates it")
    print(
        "check after starting: the platform switch and each work coordinator's `enabled` flag "
        "are restored with the data (`workcoord admin settings get`)"
    )
    return EXIT_OK
