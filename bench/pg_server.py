"""A private PostgreSQL server for one benchmark cell (B11 ``--isolated``).

``initdb`` into a temporary directory with the installed server binaries, ``pg_ctl start`` on a
free loopback port — pinned to a CPU set with ``taskset`` when one is given, so the postmaster
and every process it forks (backends, checkpointer, WAL writer, …) inherit that affinity — and,
on the way out (an error and Ctrl-C included), ``pg_ctl stop -m fast`` and the directory
removed. ``initdb`` refuses to run as root, so when this runs as root the server is created and
run as the ``postgres`` OS user (the directory is handed to it).

Every server gets the same settings, :data:`SETTINGS`; durability is not traded: ``fsync``,
``synchronous_commit``, ``full_page_writes`` and the WAL settings stay at PostgreSQL's defaults.
The data directory lives under the system's temporary directory (``TMPDIR``), which must be on a
real disk for commit figures to mean anything (``fsync`` on tmpfs costs nothing).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workcoord.kit.startup import free_port

SETTINGS: Mapping[str, str] = {
    "shared_buffers": "128MB",
    "max_connections": "100",
    "listen_addresses": "127.0.0.1",
    "logging_collector": "off",
}
"""The settings of every cell's server (PostgreSQL's defaults for the rest)."""

OS_USER = "postgres"
"""The OS user that owns and runs the server when this runs as root."""


def bin_dir() -> Path:
    """The directory of ``initdb`` and ``pg_ctl``: ``WORKCOORD_BENCH_PG_BIN``, else the newest
    ``/usr/lib/postgresql/*/bin``, else ``pg_config --bindir``."""
    configured = os.environ.get("WORKCOORD_BENCH_PG_BIN")
    if configured:
        return Path(configured)
    installed = sorted(
        (Path(p) for p in glob.glob("/usr/lib/postgresql/*/bin") if Path(p, "initdb").exists()),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    if installed:
        return installed[-1]
    try:
        found = subprocess.run(
            ["pg_config", "--bindir"], capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        raise RuntimeError(
            "no PostgreSQL server binaries found (set WORKCOORD_BENCH_PG_BIN)"
        ) from exc
    return Path(found.stdout.strip())


@dataclass
class PgServer:
    """A running private server."""

    root: Path
    port: int

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def log_path(self) -> Path:
        return self.root / "server.log"

    @property
    def admin_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def postmaster_pid(self) -> int:
        return int((self.data_dir / "postmaster.pid").read_text().split("\n", 1)[0])

    def pids(self) -> list[int]:
        """The postmaster and every process it forked that is running now."""
        postmaster = self.postmaster_pid()
        return [postmaster, *children(postmaster)]

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def children(parent: int) -> list[int]:
    """The running processes whose parent is ``parent`` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue  # gone meanwhile
        for line in status.splitlines():
            if line.startswith("PPid:"):
                if int(line.split()[1]) == parent:
                    found.append(int(entry.name))
                break
    return sorted(found)


def _run_as() -> dict[str, Any]:
    """``subprocess`` arguments that run a command as :data:`OS_USER` when this is root."""
    if os.geteuid() != 0:
        return {}
    return {"user": OS_USER, "group": pwd.getpwnam(OS_USER).pw_gid, "extra_groups": []}


@contextlib.contextmanager
def pg_server(cpus: str | None = None) -> Iterator[PgServer]:
    """A fresh server, pinned to ``cpus`` (a ``taskset --cpu-list`` list, e.g. ``"0"``) if
    given; stopped and its directory removed afterwards."""
    binaries = bin_dir()
    root = Path(tempfile.mkdtemp(prefix="workcoord-bench-pg-"))
    run_as = _run_as()
    started = False
    try:
        if run_as:
            owner = pwd.getpwnam(OS_USER)
            os.chown(root, owner.pw_uid, owner.pw_gid)
        server = PgServer(root, free_port())
        subprocess.run(
            [
                str(binaries / "initdb"),
                "--pgdata",
                str(server.data_dir),
                "--username",
                "postgres",
                "--auth",
                "trust",
                "--encoding",
                "UTF8",
                "--no-sync",  # initdb's own files only; the server runs with fsync on
            ],
            check=True,
            capture_output=True,
            **run_as,
        )
        options = [f"-p {server.port}", f"-k {root}"]
        options += [f"-c {name}={value}" for name, value in SETTINGS.items()]
        command = [str(binaries / "pg_ctl"), "--pgdata", str(server.data_dir)]
        command += ["--log", str(server.log_path), "--wait", "--timeout", "300"]
        command += ["--options", " ".join(options), "start"]
        if cpus is not None:
            command = ["taskset", "--cpu-list", cpus, *command]
        started = True  # from here a half-started server is stopped too
        try:
            subprocess.run(command, check=True, capture_output=True, **run_as)
        except subprocess.CalledProcessError:
            print(f"--- PostgreSQL server log (tail) ---\n{server.log_tail()}")
            raise
        yield server
    finally:
        if started:
            stop = ["--mode", "fast", "--wait", "--timeout", "120", "stop"]
            subprocess.run(
                [str(binaries / "pg_ctl"), "--pgdata", str(root / "data"), *stop],
                capture_output=True,
                check=False,
                **run_as,
            )
        shutil.rmtree(root, ignore_errors=True)
