"""A command in its own process group, so the supervisor can signal it and everything it started.

The command is started in a new session (its pid is the group id). Stopping it sends a signal
to the whole group, waits up to a grace period for every member to go, then sends SIGKILL to
whatever is left. A member is "gone" once it no longer exists or is a zombie (it runs nothing;
whoever inherited it reaps it).
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["ProcessGroup", "group_members"]

# How often to look whether a signalled group has emptied (there is no event for that).
_POLL_SECONDS = 0.05


def group_members(pgid: int) -> list[int]:
    """Pids of the live (non-zombie) processes in process group ``pgid``.

    Reads /proc on Linux; elsewhere it can only tell whether the group has any member at all
    (zombies included), and answers ``[pgid]`` for "some".
    """
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return []
        except PermissionError:
            pass
        return [pgid]
    members = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text(encoding="ascii", errors="replace")
        except OSError:
            continue  # exited meanwhile, or not ours to read
        # The command name is parenthesised and may hold spaces: the fields follow its last ")".
        fields = stat.rpartition(")")[2].split()
        if len(fields) > 2 and fields[0] != "Z" and fields[2] == str(pgid):
            members.append(int(entry.name))
    return sorted(members)


class ProcessGroup:
    """A started command, leader of its own process group."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.pgid = process.pid

    @classmethod
    async def spawn(
        cls,
        command: Sequence[str],
        *,
        cwd: str,
        env: Mapping[str, str],
        stdout: int | None = None,
    ) -> ProcessGroup:
        """Start ``command`` in ``cwd`` with exactly ``env``, stdin from /dev/null."""
        process = await asyncio.create_subprocess_exec(
            *command,
            cwd=cwd,
            env=dict(env),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=stdout,
            start_new_session=True,
        )
        return cls(process)

    @property
    def pid(self) -> int:
        return self.process.pid

    def send(self, signum: int) -> bool:
        """Signal every member; False when the group is already empty."""
        try:
            os.killpg(self.pgid, signum)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True  # a member changed credentials; the others were signalled
        return True

    def members(self) -> list[int]:
        """Live members now."""
        return group_members(self.pgid)

    async def wait(self) -> int:
        """The leader's exit status (negative: killed by that signal)."""
        return await self.process.wait()

    async def stop(self, grace: float, first: int = signal.SIGTERM) -> list[int]:
        """Send ``first`` to the group, give it ``grace`` seconds to go, then SIGKILL what is
        left; the pids that had to be killed. Reaps the leader. SIGKILL is sent even when this
        coroutine is cancelled while waiting."""
        killed: list[int] = []
        if self.send(first):
            try:
                await self._gone_within(grace)
            finally:
                killed = self.members()
                if killed:
                    self.send(signal.SIGKILL)
        await self.process.wait()
        return killed

    async def _gone_within(self, grace: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        try:
            await asyncio.wait_for(self.process.wait(), grace)
        except TimeoutError:
            return
        # Orphaned members are not our children: nothing announces their end, so look again.
        while loop.time() < deadline:
            if not self.members():
                return
            await asyncio.sleep(_POLL_SECONDS)
