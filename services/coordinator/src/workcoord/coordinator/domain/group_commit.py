"""Group commit: concurrent worker writes of one work coordinator share one transaction.

Every change to a work coordinator holds its lock until commit. With one transaction per
worker write, the writes queue on that lock inside the database, each holding it across
several round trips while the event loop serves everyone else. Instead, writes that arrive
while a transaction is open join it: they run one after another on its connection, and one
commit (one lock hold, one notification) covers them all. Each caller returns only after
that commit.

A member that raises one of our errors must do so before it writes anything (the fenced
worker writes check first, then write), so it drops out without disturbing the others; any
other exception fails the whole group, which rolls back.

A caller that goes away (its deadline passes, the client cancels) must not interrupt a
member half-way through a statement on the shared connection: the connection would be left
unusable and every other member would fail. So each member runs as its own task, shielded
(:func:`shielded`): it finishes its part of the group whatever happens to its caller.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Generic, ParamSpec, TypeVar

from workcoord.kit.errors import Code, WorkcoordError

from .model import Coordinator
from .ports import Tx


class Aborted(WorkcoordError):
    """A shared transaction rolled back through no fault of this call: retry it."""

    code = Code.ABORTED
    reason = "ABORTED"
    default_message = "aborted; retry"


# A group stops taking members after this many, so a steady stream of writes still commits.
MAX_MEMBERS = 128

_C = TypeVar("_C")
_P = ParamSpec("_P")
_T = TypeVar("_T")

# Shielded members still running after their caller went away (kept so they are not collected).
_orphans: set[asyncio.Task[Any]] = set()


def _forget(task: asyncio.Task[Any]) -> None:
    _orphans.discard(task)
    if not task.cancelled():
        task.exception()  # retrieved: an orphan's failure is its own caller's, who is gone


def shielded(
    method: Callable[_P, Coroutine[Any, Any, _T]],
) -> Callable[_P, Coroutine[Any, Any, _T]]:
    """Run each call of ``method`` (a group member) to its end even if its caller is
    cancelled: the caller gets the cancellation at once, the shared transaction never sees
    it."""

    @functools.wraps(method)
    async def run(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        task = asyncio.ensure_future(method(*args, **kwargs))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if not task.done():
                _orphans.add(task)
                task.add_done_callback(_forget)
            raise

    return run


Opener = Callable[[], AbstractAsyncContextManager[tuple[Tx, Coordinator]]]


@dataclass(eq=False)
class _Group(Generic[_C]):
    """One open transaction and the writes that joined it."""

    context: _C
    members: int = 0
    joined: int = 0
    closing: bool = False
    tx: Tx | None = None
    coordinator: Coordinator | None = None
    error: BaseException | None = None
    failed: BaseException | None = None
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    done_writing: asyncio.Event = field(default_factory=asyncio.Event)
    turn: asyncio.Lock = field(default_factory=asyncio.Lock)
    committed: asyncio.Event = field(default_factory=asyncio.Event)


class GroupCommitter(Generic[_C]):
    """Groups writes per key (a work coordinator id).

    ``opener()`` opens the transaction and yields ``(tx, coordinator)``; it may raise (the
    coordinator is missing or switched off), and every member then gets that error.
    ``new_context()`` makes the state the members share (what to announce after commit);
    ``before_commit`` writes what they gathered, ``after_commit`` announces it.
    """

    def __init__(
        self,
        new_context: Callable[[], _C],
        before_commit: Callable[[Tx, Coordinator, _C], Awaitable[None]],
        after_commit: Callable[[Coordinator, _C], Awaitable[None]],
    ) -> None:
        self._new_context = new_context
        self._before_commit = before_commit
        self._after_commit = after_commit
        self._open: dict[str, _Group[_C]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    @asynccontextmanager
    async def member(self, key: str, opener: Opener) -> AsyncIterator[tuple[Tx, Coordinator, _C]]:
        """Join (or start) the open group of ``key``; the body runs inside its transaction."""
        group = self._open.get(key)
        if group is None:
            group = _Group(context=self._new_context())
            self._open[key] = group
            task = asyncio.create_task(self._run(key, group, opener))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        group.members += 1
        group.joined += 1
        if group.joined >= MAX_MEMBERS:
            self._close(key, group)
        try:
            await group.ready.wait()
            if group.error is not None:
                raise group.error
            assert group.tx is not None and group.coordinator is not None
            async with group.turn:
                revision = group.coordinator.revision
                try:
                    yield group.tx, group.coordinator, group.context
                except WorkcoordError:
                    # Raised before writing: this member drops out, the group goes on.
                    group.coordinator.revision = revision
                    raise
                except Exception as exc:
                    group.failed = exc
                    raise
                except BaseException:
                    # Cancelled half-way: what it wrote cannot be told apart, so the group
                    # rolls back and the others are told to retry.
                    group.failed = Aborted("the shared transaction was abandoned; retry")
                    raise
        finally:
            group.members -= 1
            if group.members == 0:
                self._close(key, group)
                group.done_writing.set()
        await group.committed.wait()
        if group.error is not None:
            raise group.error

    def _close(self, key: str, group: _Group[_C]) -> None:
        """Take no new members: the next write starts the next group."""
        group.closing = True
        if self._open.get(key) is group:
            del self._open[key]

    async def _run(self, key: str, group: _Group[_C], opener: Opener) -> None:
        try:
            async with opener() as (tx, coordinator):
                group.tx, group.coordinator = tx, coordinator
                group.ready.set()
                await group.done_writing.wait()
                if group.failed is not None:
                    raise group.failed
                await self._before_commit(tx, coordinator, group.context)
        except BaseException as exc:
            group.error = group.error or exc
            self._close(key, group)
            group.ready.set()
            group.committed.set()
            if not isinstance(exc, Exception):
                raise
            return
        try:
            # Announce before the members return, as a lone command does: a caller that saw
            # its write succeed can rely on the notification (and follow-up work) being out.
            await self._after_commit(coordinator, group.context)
        finally:
            group.committed.set()
