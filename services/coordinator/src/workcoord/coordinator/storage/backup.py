"""Backups of the coordinator's database, and restoring the embedded one.

- SQLite (``workcoord dev``): an online, consistent snapshot through SQLite's backup API, which
  copies the pages of one read transaction while writers carry on (WAL). The file is created
  with mode 0600: it holds every token hash and work item. Restoring copies a snapshot back
  the same way; the caller makes sure no server uses the database meanwhile.
- PostgreSQL: ``pg_dump --format=custom`` (restore with ``pg_restore``, see deploy/RUNBOOK.md).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy.engine import make_url

from workcoord.kit.startup import StartupError

__all__ = [
    "BACKUP_DIR",
    "BackupError",
    "backup",
    "backup_postgres",
    "backup_sqlite",
    "default_backup_path",
    "restore_sqlite",
    "snapshot_revision",
    "sqlite_path",
]

BACKUP_DIR = "backups"
"""Folder (beside the SQLite file) where backups go unless told otherwise."""

_PG_DUMP_TIMEOUT_SECONDS = 6 * 3600


class BackupError(StartupError):
    """A backup or restore could not be made; the message says why in one line."""


def sqlite_path(database_url: str) -> Path | None:
    """The database file of a SQLite URL; None for any other database."""
    url = make_url(database_url)
    if not url.drivername.startswith("sqlite"):
        return None
    if not url.database or url.database == ":memory:":
        raise BackupError("an in-memory SQLite database cannot be backed up")
    return Path(url.database)


def default_backup_path(database_url: str, label: str = "", now: datetime | None = None) -> Path:
    """``<sqlite dir>/backups/workcoord-[label-]<UTC>.db``; ``./workcoord-…dump`` for PostgreSQL."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    name = f"workcoord-{label + '-' if label else ''}{stamp}"
    path = sqlite_path(database_url)
    if path is None:
        return Path.cwd() / f"{name}.dump"
    return path.parent / BACKUP_DIR / f"{name}.db"


def backup(database_url: str, output: Path) -> Path:
    """Back ``database_url`` up into ``output`` (SQLite snapshot or ``pg_dump`` archive)."""
    path = sqlite_path(database_url)
    if path is None:
        return backup_postgres(database_url, output)
    return backup_sqlite(path, output)


def backup_sqlite(database: Path, output: Path) -> Path:
    """An online snapshot of ``database`` written to ``output`` (mode 0600, never overwritten)."""
    if not database.is_file():
        raise BackupError(f"no database at {database}")
    _create_private(output)
    try:
        # Read-only: a backup must never create or change the database it copies.
        with (
            contextlib.closing(sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True)) as src,
            contextlib.closing(sqlite3.connect(output)) as dst,
        ):
            src.backup(dst)
            # A snapshot is one self-contained file: no -wal beside it.
            dst.execute("PRAGMA journal_mode=DELETE")
    except sqlite3.Error as exc:
        output.unlink(missing_ok=True)
        raise BackupError(f"backing up {database} failed: {exc}") from None
    return output


def backup_postgres(database_url: str, output: Path) -> Path:
    """``pg_dump --format=custom`` of ``database_url`` into ``output`` (mode 0600)."""
    pg_dump = shutil.which("pg_dump")
    if pg_dump is None:
        raise BackupError(
            "pg_dump is not installed: install the PostgreSQL client of your server's major "
            "version (e.g. apt-get install postgresql-client), or use your provider's backups"
        )
    url = make_url(database_url).set(drivername="postgresql")
    env = {**os.environ}
    if url.password is not None:
        # Through the environment, never on the command line (ps shows arguments).
        env["PGPASSWORD"] = str(url.password)
        url = url.set(password=None)
    _create_private(output)
    result = subprocess.run(  # noqa: S603 - fixed program, arguments are not shell-parsed
        [pg_dump, "--format=custom", "--no-owner", f"--file={output}", url.render_as_string()],
        env=env,
        capture_output=True,
        text=True,
        timeout=_PG_DUMP_TIMEOUT_SECONDS,
        check=False,
    )
    if result.returncode != 0:
        output.unlink(missing_ok=True)
        reason = (result.stderr.strip().splitlines() or ["no message"])[-1]
        raise BackupError(f"pg_dump failed (exit {result.returncode}): {reason}")
    return output


def snapshot_revision(snapshot: Path) -> str:
    """The schema revision of a SQLite snapshot; :class:`BackupError` if it is not one."""
    if not snapshot.is_file():
        raise BackupError(f"no backup at {snapshot}")
    try:
        with contextlib.closing(
            sqlite3.connect(f"{snapshot.resolve().as_uri()}?mode=ro", uri=True)
        ) as conn:
            (verdict,) = conn.execute("PRAGMA quick_check").fetchone()
            if verdict != "ok":
                raise BackupError(f"{snapshot} is damaged: {verdict}")
            row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    except sqlite3.Error as exc:
        raise BackupError(f"{snapshot} is not a workcoord SQLite backup: {exc}") from None
    if row is None:
        raise BackupError(f"{snapshot} has no workcoord schema revision")
    return str(row[0])


def restore_sqlite(snapshot: Path, database: Path) -> str:
    """Replace ``database`` with ``snapshot``'s content; returns the restored schema revision.

    The caller guarantees no server uses ``database`` (the state folder's lock). The current
    database is overwritten page by page through SQLite, so its WAL stays consistent.
    """
    revision = snapshot_revision(snapshot)
    database.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not database.exists():
        _create_private(database)
    try:
        with (
            contextlib.closing(
                sqlite3.connect(f"{snapshot.resolve().as_uri()}?mode=ro", uri=True)
            ) as src,
            contextlib.closing(sqlite3.connect(database)) as dst,
        ):
            src.backup(dst)
            dst.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.Error as exc:
        raise BackupError(f"restoring {database} from {snapshot} failed: {exc}") from None
    return revision


def _create_private(path: Path) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        # O_EXCL: never overwrite a backup; 0600 from the first byte.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise BackupError(f"{path} already exists: choose another --output") from None
    except OSError as exc:
        raise BackupError(f"cannot create {path}: {exc.strerror}") from None
    os.close(fd)
