"""The group committer on the in-memory store: writes that arrive while a transaction is open
share it, one after another in arrival order; one commit and one announcement cover them all,
and the announcement is out before any of them returns. A member that raises one of our errors
drops out alone; any other failure (or a member abandoned half-way) rolls the group back."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import pytest

from workcoord.coordinator.domain import group_commit
from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.domain.group_commit import Aborted, GroupCommitter, Opener
from workcoord.coordinator.domain.model import Coordinator, EventType, NewEvent
from workcoord.coordinator.domain.ports import Tx
from workcoord.coordinator.storage.memory import MemoryStore
from workcoord.kit.errors import InvalidArgument, NotFound

from .harness import World, make_world

WAIT_SECONDS = 30.0  # generous: only a broken committer waits this long


@dataclass
class Gathered:
    """What the members of one group share: the names of the writes that went through."""

    writes: list[str] = field(default_factory=list)


@dataclass
class Group:
    """A committer over ``store`` for one work coordinator, and a log of what happened."""

    store: MemoryStore
    cid: str
    log: list[str] = field(default_factory=list)
    opened: int = 0
    committed: list[list[str]] = field(default_factory=list)
    announced: list[list[str]] = field(default_factory=list)
    committer: GroupCommitter[Gathered] = field(init=False)

    def __post_init__(self) -> None:
        self.committer = GroupCommitter(Gathered, self._before_commit, self._after_commit)

    async def _before_commit(self, tx: Tx, coordinator: Coordinator, gathered: Gathered) -> None:
        self.committed.append(list(gathered.writes))

    async def _after_commit(self, coordinator: Coordinator, gathered: Gathered) -> None:
        self.log.append("announced")
        self.announced.append(list(gathered.writes))

    @asynccontextmanager
    async def _open(self) -> AsyncIterator[tuple[Tx, Coordinator]]:
        async with self.store.write(self.cid) as tx:
            assert tx.coordinator is not None
            self.opened += 1
            yield tx, tx.coordinator

    async def write(
        self,
        name: str,
        *,
        fail: BaseException | None = None,
        entered: asyncio.Event | None = None,
        hold: asyncio.Event | None = None,
        opener: Opener | None = None,
    ) -> None:
        """One member: append an event named ``name`` (or raise ``fail`` first; or, once in
        the transaction, set ``entered`` and wait for ``hold``)."""
        async with self.committer.member(self.cid, opener or self._open) as (
            tx,
            coordinator,
            gathered,
        ):
            self.log.append(f"enter {name}")
            if entered is not None:
                entered.set()
            if hold is not None:
                await hold.wait()
            if fail is not None:
                coordinator.revision += 5  # a stray change in memory that must not stick
                raise fail
            await asyncio.sleep(0)  # give the others every chance to interleave
            coordinator.revision = await tx.append(
                coordinator, [NewEvent(EventType.COORDINATOR_UPDATED, data={"by": name})], name
            )
            gathered.writes.append(name)
            self.log.append(f"leave {name}")
        self.log.append(f"returned {name}")

    async def revisions(self) -> tuple[int, list[int], list[str]]:
        """The coordinator's revision, its events' revisions and who wrote them."""
        async with self.store.read() as reader:
            coordinator = await reader.get_coordinator(self.cid)
            events = await reader.list_events(self.cid, 0, 1000, "", "")
        assert coordinator is not None
        writers = [str(e.data["by"]) for e in events if e.type == EventType.COORDINATOR_UPDATED]
        return coordinator.revision, [e.revision for e in events], writers


@pytest.fixture
async def group(store: MemoryStore, engine: Engine) -> Group:
    world: World = await make_world(engine)
    return Group(store, world.cid)


async def _together(*writes: asyncio.Task[None]) -> list[BaseException | None]:
    """Every write's outcome: None, or what it raised."""
    async with asyncio.timeout(WAIT_SECONDS):
        return list(await asyncio.gather(*writes, return_exceptions=True))


async def test_writes_that_arrive_together_share_one_transaction_in_arrival_order(
    group: Group,
) -> None:
    before, _, _ = await group.revisions()
    results = await _together(*(asyncio.create_task(group.write(name)) for name in ("a", "b", "c")))
    assert results == [None, None, None]
    assert group.opened == 1
    assert group.committed == [["a", "b", "c"]]
    assert group.announced == [["a", "b", "c"]]
    # One after another: no member's body interleaves with another's.
    bodies = [line for line in group.log if line.startswith(("enter", "leave"))]
    assert bodies == ["enter a", "leave a", "enter b", "leave b", "enter c", "leave c"]
    revision, revisions, writers = await group.revisions()
    assert revision == before + 3
    assert revisions == list(range(1, revision + 1))
    assert writers == ["a", "b", "c"]


async def test_the_announcement_is_out_before_any_member_returns(group: Group) -> None:
    await _together(*(asyncio.create_task(group.write(name)) for name in ("a", "b")))
    announced = group.log.index("announced")
    assert all(announced < group.log.index(f"returned {name}") for name in ("a", "b")), group.log


async def test_writes_one_after_another_each_commit_on_their_own(group: Group) -> None:
    await group.write("first")
    await group.write("second")
    assert group.opened == 2
    assert group.committed == [["first"], ["second"]]
    _, _, writers = await group.revisions()
    assert writers == ["first", "second"]


async def test_a_member_refused_with_our_error_drops_out_alone(group: Group) -> None:
    before, _, _ = await group.revisions()
    refused = InvalidArgument.single("lease_token", "is wrong")
    results = await _together(
        asyncio.create_task(group.write("a")),
        asyncio.create_task(group.write("b", fail=refused)),
        asyncio.create_task(group.write("c")),
    )
    assert results[0] is None and results[2] is None
    assert results[1] is refused
    assert group.opened == 1
    assert group.committed == [["a", "c"]]
    revision, revisions, writers = await group.revisions()
    # The refused member's stray revision change was undone: c's event follows a's directly.
    assert revision == before + 2
    assert revisions == list(range(1, revision + 1))
    assert writers == ["a", "c"]


async def test_any_other_failure_rolls_the_whole_group_back(group: Group) -> None:
    before, before_revisions, _ = await group.revisions()
    boom = RuntimeError("a bug in one member")
    results = await _together(
        asyncio.create_task(group.write("a")),
        asyncio.create_task(group.write("b", fail=boom)),
        asyncio.create_task(group.write("c")),
    )
    assert results == [boom, boom, boom]
    assert group.committed == [] and group.announced == []
    assert await group.revisions() == (before, before_revisions, [])


async def test_a_member_abandoned_half_way_rolls_back_and_the_others_are_told_to_retry(
    group: Group,
) -> None:
    before, before_revisions, _ = await group.revisions()
    entered, never = asyncio.Event(), asyncio.Event()
    stuck = asyncio.create_task(group.write("stuck", entered=entered, hold=never))
    other = asyncio.create_task(group.write("other"))
    async with asyncio.timeout(WAIT_SECONDS):
        await entered.wait()
    stuck.cancel()
    results = await _together(stuck, other)
    assert isinstance(results[0], asyncio.CancelledError)
    assert isinstance(results[1], Aborted)
    assert group.committed == [] and group.announced == []
    assert await group.revisions() == (before, before_revisions, [])


async def test_when_the_transaction_cannot_open_every_member_gets_that_error(
    group: Group,
) -> None:
    missing = NotFound("work coordinator gone")

    @asynccontextmanager
    async def cannot_open() -> AsyncIterator[tuple[Tx, Coordinator]]:
        raise missing
        yield  # an async generator, never reached

    results = await _together(
        *(asyncio.create_task(group.write(name, opener=cannot_open)) for name in ("a", "b"))
    )
    assert results == [missing, missing]
    assert group.committed == [] and group.announced == []


async def test_a_full_group_takes_no_more_members(
    group: Group, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(group_commit, "MAX_MEMBERS", 2)
    results = await _together(*(asyncio.create_task(group.write(name)) for name in ("a", "b", "c")))
    assert results == [None, None, None]
    assert group.opened == 2
    assert group.committed == [["a", "b"], ["c"]]
    _, revisions, writers = await group.revisions()
    assert writers == ["a", "b", "c"]
    assert revisions == list(range(1, len(revisions) + 1))
