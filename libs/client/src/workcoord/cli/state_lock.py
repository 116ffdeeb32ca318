"""The state folder's lock: one ``workcoord dev`` per folder, and no restore under a live server.

``workcoord dev`` holds an exclusive ``flock`` on ``<state-dir>/lock`` for its whole life
(the kernel drops it when the process dies, so a crash never leaves a stale lock); the file
also names the holder's pid for the error message. ``workcoord db restore`` takes the same
lock, so it refuses while a server runs and no server starts mid-restore.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from workcoord.cli.common import EXIT_ERROR, CliError

__all__ = ["LOCK_FILE", "StateFolderBusy", "hold_state_lock"]

LOCK_FILE = "lock"


class StateFolderBusy(CliError):
    """Another process holds the state folder's lock."""

    def __init__(self, state_dir: Path, holder: str) -> None:
        who = f"process {holder}" if holder else "another process"
        super().__init__(
            f"the state folder {state_dir} is in use by {who} (a running `workcoord dev`?): "
            "stop it first",
            EXIT_ERROR,
        )


@contextlib.contextmanager
def hold_state_lock(state_dir: Path) -> Iterator[None]:
    """Hold ``<state_dir>/lock`` exclusively, or raise :class:`StateFolderBusy` at once."""
    path = state_dir / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
            raise StateFolderBusy(state_dir, holder) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
