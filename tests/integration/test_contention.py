"""Contention: two coordinator processes, one PostgreSQL, many concurrent workers.

Two ``workcoord serve coordinator`` processes share a database and Redis. Forty asyncio workers,
split across both, lease batches of 1 to 5 items or 10 to 15 (claims that take the row at once,
and large ones that take it at their flush), then complete, fail (retryably) or release after a
tiny random delay, until every item is SUCCEEDED or DEAD. Meanwhile a sampler reads
PostgreSQL directly, in single-snapshot statements, and afterwards the event log is replayed:

- at most one live attempt per item and per exclusive key, at every sample and in the replay;
- live attempts per class never above the class capacity;
- revisions gap-free from 1; every item terminal, and each succeeded item succeeded once.

And lanes whose two items complete at once, one on each server, each in its server's group of
worker writes: every lane ends DONE (one group at a time per coordinator).
"""

from __future__ import annotations

import asyncio
import functools
import random
import secrets
import time
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from tests.support.databases import delete_redis_keys
from tests.support.harness import all_events, create_coordinator, create_work_key, identity
from tests.support.processes import (
    READY_TIMEOUT_SECONDS,
    ServiceProcess,
    free_port,
    grpc_serving,
    service_env,
    wait_ready,
)
from workcoord.api.v1 import (
    admin_pb2,
    event_pb2,
    lane_pb2,
    policy_pb2,
    worker_pb2,
)
from workcoord.client import WorkcoordClient
from workcoord.kit.clock import SystemClock
from workcoord.kit.errors import LeaseLost

# The run takes about 15 s on a quiet 2-core machine; nothing here is bound by time (the
# pytest timeout only ends a hang), so a loaded machine makes it slower, never failing.
pytestmark = [pytest.mark.pg, pytest.mark.redis, pytest.mark.timeout(1800)]

CAPACITY = {"machine": 3, "agent": 2}
ITEMS = 100
LANE_SIZE = 40
WORKERS = 40
EXCLUSIVE_KEYS = ["repo:alpha", "repo:beta", "repo:gamma"]

LIVE_BY_CLASS = text(
    "SELECT worker_class, count(*) FROM attempts "
    "WHERE coordinator_id = :c AND status IN ('LEASED', 'RUNNING') GROUP BY worker_class"
)
ITEMS_WITH_TWO_LIVE = text(
    "SELECT item_id FROM attempts WHERE coordinator_id = :c AND status IN ('LEASED', 'RUNNING') "
    "GROUP BY item_id HAVING count(*) > 1"
)
KEYS_WITH_TWO_LIVE = text(
    "SELECT i.exclusive_key FROM attempts a JOIN items i ON i.item_id = a.item_id "
    "WHERE a.coordinator_id = :c AND a.status IN ('LEASED', 'RUNNING') AND i.exclusive_key <> '' "
    "GROUP BY i.exclusive_key HAVING count(*) > 1"
)
OPEN_ITEMS = text(
    "SELECT count(*) FROM items WHERE coordinator_id = :c AND state NOT IN ('SUCCEEDED', 'DEAD')"
)


@dataclass
class Tally:
    leased: int = 0
    completed: int = 0
    failed: int = 0
    released: int = 0
    heartbeats: int = 0
    lease_lost: int = 0
    by_server: Counter[int] = field(default_factory=Counter)
    samples: int = 0
    max_live: Counter[str] = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)


@pytest.fixture
async def servers(pg_url: str, redis: str, tmp_path: Path) -> AsyncIterator[tuple[list[str], str]]:
    """Two coordinator processes on one database; their addresses and the admin token."""
    admin_token = f"wcadm_{secrets.token_hex(16)}"
    service_key = f"wcsvc_{secrets.token_hex(16)}"
    started: list[ServiceProcess] = []
    addresses: list[str] = []
    try:
        for name in ("coordinator-a", "coordinator-b"):
            address = f"127.0.0.1:{free_port()}"
            env = service_env(
                DATABASE_URL=pg_url,
                REDIS_URL=redis,
                WORKCOORD_LISTEN_COORDINATOR=address,
                WORKCOORD_BOOTSTRAP_ADMIN_TOKEN=admin_token,
                WORKCOORD_SERVICE_KEY=service_key,
                WORKCOORD_LOG_LEVEL="WARNING",
            )
            service = ServiceProcess(name, ["serve", "coordinator"], env, tmp_path / f"{name}.log")
            service.start()
            started.append(service)
            addresses.append(address)
        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        for service, address in zip(started, addresses, strict=True):
            serving = functools.partial(grpc_serving, address)
            await asyncio.to_thread(wait_ready, serving, service, deadline)
        yield addresses, admin_token
    finally:
        for service in started:
            await asyncio.to_thread(service.stop)


async def setup_work(admin: WorkcoordClient) -> tuple[str, str, dict[str, str], dict[str, str]]:
    """An org, a small-capacity work coordinator, a key and the items; returns
    (coordinator id, key secret, item → class, item → exclusive key)."""
    org = f"org-{secrets.token_hex(4)}"
    await admin.admin.CreateOrg(admin_pb2.CreateOrgRequest(org=admin_pb2.Org(slug=org)))
    retry = policy_pb2.RetryPolicy(maximum_attempts=3, backoff_coefficient=1.0)
    retry.initial_interval.FromMilliseconds(20)
    retry.maximum_interval.FromMilliseconds(20)
    cid = await create_coordinator(admin, org, class_capacity=CAPACITY, retry_policy=retry)
    key = await create_work_key(admin, [cid], org=org, display_name="fleet")
    classes: dict[str, str] = {}
    exclusive: dict[str, str] = {}
    rng = random.Random(7)
    for start in range(0, ITEMS, LANE_SIZE):
        items = []
        for n in range(start, min(start + LANE_SIZE, ITEMS)):
            items.append(
                lane_pb2.Item(
                    key=f"i{n}",
                    kind=lane_pb2.Item.TASK,
                    worker_class="machine" if n % 3 else "agent",
                    exclusive_key=rng.choice(EXCLUSIVE_KEYS) if n % 4 == 0 else "",
                    priority=rng.randint(0, 3),
                )
            )
        lane = await admin.lanes.CreateLane(
            lane_pb2.CreateLaneRequest(
                coordinator_id=cid,
                lane=lane_pb2.Lane(title="load", template=lane_pb2.Lane.CUSTOM, items=items),
            )
        )
        for item in lane.lane.items:
            classes[item.item_id] = item.worker_class
            exclusive[item.item_id] = item.exclusive_key
    return cid, key.secret, classes, exclusive


async def worker_loop(
    client: WorkcoordClient,
    cid: str,
    worker_id: str,
    worker_class: str,
    tally: Tally,
    done: asyncio.Event,
    seed: int,
    batched: bool = False,
) -> None:
    rng = random.Random(seed)
    clock = SystemClock()
    while not done.is_set():
        run_identity = identity(clock, pid=1000 + seed) if rng.random() < 0.5 else None
        request = worker_pb2.LeaseRequest(
            coordinator_id=cid,
            worker_id=worker_id,
            worker_class=worker_class,
            # A claim of 10 or more takes the row only at its flush (WriteLock.LARGE_CLAIM).
            max_items=rng.randint(1, 5) if rng.random() < 0.7 else rng.randint(10, 15),
            lease_seconds=120,
            wait_seconds=1,
        )
        if run_identity is not None:
            request.run_identity.CopyFrom(run_identity)
        leases = (await client.workers.Lease(request)).leases
        tally.leased += len(leases)
        tally.by_server[seed % 2] += len(leases)
        if batched:
            await handle_batched(client, cid, leases, rng, run_identity is None, tally, seed)
            continue
        for lease in leases:
            try:
                await handle(client, cid, lease, rng, run_identity is None, tally, seed)
            except LeaseLost:
                tally.lease_lost += 1


async def handle_batched(
    client: WorkcoordClient,
    cid: str,
    leases: Sequence[worker_pb2.Lease],
    rng: random.Random,
    needs_start: bool,
    tally: Tally,
    seed: int,
) -> None:
    """The leases of one Lease call finished together: releases one by one, then every
    complete in one BatchComplete and every fail in one BatchFail."""
    completes: list[worker_pb2.CompleteRequest] = []
    fails: list[worker_pb2.FailRequest] = []
    for lease in leases:
        ref: dict[str, Any] = {
            "coordinator_id": cid,
            "lease_id": lease.lease_id,
            "lease_token": lease.lease_token,
        }
        roll = rng.random()
        if roll < 0.1:
            await client.workers.Release(worker_pb2.ReleaseRequest(**ref, reason="busy"))
            tally.released += 1
            continue
        if needs_start:
            await client.workers.Start(
                worker_pb2.StartRequest(
                    **ref, run_identity=identity(SystemClock(), pid=2000 + seed)
                )
            )
        if roll < 0.25:
            error = lane_pb2.ErrorInfo(message="flaky", type="Flaky", retryable=True)
            fails.append(worker_pb2.FailRequest(**ref, error=error))
        else:
            evidence = lane_pb2.Evidence(summary="ok")
            completes.append(worker_pb2.CompleteRequest(**ref, evidence=evidence))
    beating: list[worker_pb2.CompleteRequest | worker_pb2.FailRequest] = [*completes, *fails]
    if beating:
        # A heartbeat of every lease about to end, in one BatchHeartbeat: heartbeats take no
        # coordinator lock, so they race the other workers' writes on the attempts' rows.
        beats = await client.workers.BatchHeartbeat(
            worker_pb2.BatchHeartbeatRequest(
                coordinator_id=cid,
                requests=[
                    worker_pb2.HeartbeatRequest(
                        coordinator_id=cid, lease_id=r.lease_id, lease_token=r.lease_token
                    )
                    for r in beating
                ],
            )
        )
        assert [b.status.code for b in beats.results] == [0] * len(beating)
        tally.heartbeats += len(beating)
    await asyncio.sleep(rng.uniform(0, 0.01))
    if completes:
        done = await client.workers.BatchComplete(
            worker_pb2.BatchCompleteRequest(coordinator_id=cid, requests=completes)
        )
        for result in done.results:
            if result.status.code == 0:
                tally.completed += 1
            else:
                tally.lease_lost += 1
    if fails:
        failed = await client.workers.BatchFail(
            worker_pb2.BatchFailRequest(coordinator_id=cid, requests=fails)
        )
        for outcome in failed.results:
            if outcome.status.code == 0:
                tally.failed += 1
            else:
                tally.lease_lost += 1


async def handle(
    client: WorkcoordClient,
    cid: str,
    lease: worker_pb2.Lease,
    rng: random.Random,
    needs_start: bool,
    tally: Tally,
    seed: int,
) -> None:
    ref: dict[str, Any] = {
        "coordinator_id": cid,
        "lease_id": lease.lease_id,
        "lease_token": lease.lease_token,
    }
    roll = rng.random()
    if roll < 0.1:
        await client.workers.Release(worker_pb2.ReleaseRequest(**ref, reason="busy"))
        tally.released += 1
        return
    if needs_start:
        await client.workers.Start(
            worker_pb2.StartRequest(**ref, run_identity=identity(SystemClock(), pid=2000 + seed))
        )
    # Heartbeats take no coordinator lock: they race the other workers' writes on the rows.
    await client.workers.Heartbeat(worker_pb2.HeartbeatRequest(**ref))
    tally.heartbeats += 1
    await asyncio.sleep(rng.uniform(0, 0.01))
    if roll < 0.25:
        error = lane_pb2.ErrorInfo(message="flaky", type="Flaky", retryable=True)
        await client.workers.Fail(worker_pb2.FailRequest(**ref, error=error))
        tally.failed += 1
    else:
        await client.workers.Complete(
            worker_pb2.CompleteRequest(**ref, evidence=lane_pb2.Evidence(summary="ok"))
        )
        tally.completed += 1


async def sampler(db: AsyncEngine, cid: str, tally: Tally, done: asyncio.Event) -> None:
    while not done.is_set():
        async with db.connect() as conn:
            live = {str(r[0]): int(r[1]) for r in await conn.execute(LIVE_BY_CLASS, {"c": cid})}
            doubled = (await conn.execute(ITEMS_WITH_TWO_LIVE, {"c": cid})).scalars().all()
            shared = (await conn.execute(KEYS_WITH_TWO_LIVE, {"c": cid})).scalars().all()
            open_items = (await conn.execute(OPEN_ITEMS, {"c": cid})).scalar_one()
        tally.samples += 1
        for cls, count in live.items():
            tally.max_live[cls] = max(tally.max_live[cls], count)
            if count > CAPACITY[cls]:
                tally.violations.append(f"{cls}: {count} live > capacity {CAPACITY[cls]}")
        if doubled:
            tally.violations.append(f"items with two live attempts: {doubled}")
        if shared:
            tally.violations.append(f"exclusive keys held twice: {shared}")
        if open_items == 0:
            done.set()
            return
        await asyncio.sleep(0.02)


def peak_live(events: list[event_pb2.Event], classes: dict[str, str]) -> Counter[str]:
    """The most attempts live at once per class, replaying the event log."""
    ended = {
        event_pb2.Event.ITEM_SUCCEEDED,
        event_pb2.Event.ITEM_FAILED,
        event_pb2.Event.ITEM_RELEASED,
        event_pb2.Event.ATTEMPT_EXPIRED,
        event_pb2.Event.ITEM_CHECKPOINTED,
    }
    live: dict[str, str] = {}  # lease id → class
    peak: Counter[str] = Counter()
    for event in events:
        if event.type == event_pb2.Event.ITEM_LEASED:
            live[event.lease_id] = classes[event.item_id]
            for cls, count in Counter(live.values()).items():
                peak[cls] = max(peak[cls], count)
        elif event.type in ended:
            live.pop(event.lease_id, None)
    return peak


def replay(
    events: list[event_pb2.Event], classes: dict[str, str], exclusive: dict[str, str]
) -> list[str]:
    """Invariant violations found by replaying the event log (empty when there are none)."""
    problems: list[str] = []
    revisions = [e.revision for e in events]
    if revisions != list(range(1, len(events) + 1)):
        problems.append("revisions are not gap-free from 1")
    live: dict[str, str] = {}  # lease id → item id
    live_item: dict[str, str] = {}  # item id → lease id
    ended = {
        event_pb2.Event.ITEM_SUCCEEDED,
        event_pb2.Event.ITEM_FAILED,
        event_pb2.Event.ITEM_RELEASED,
        event_pb2.Event.ATTEMPT_EXPIRED,
        event_pb2.Event.ITEM_CHECKPOINTED,
    }
    for event in events:
        if event.type == event_pb2.Event.ITEM_LEASED:
            if event.item_id in live_item:
                problems.append(
                    f"rev {event.revision}: {event.item_id} leased while "
                    f"{live_item[event.item_id]} is live"
                )
            live[event.lease_id] = event.item_id
            live_item[event.item_id] = event.lease_id
            by_class = Counter(classes[i] for i in live.values())
            for cls, count in by_class.items():
                if count > CAPACITY[cls]:
                    problems.append(f"rev {event.revision}: {cls} {count} > {CAPACITY[cls]}")
            by_key = Counter(exclusive[i] for i in live.values() if exclusive[i])
            problems.extend(
                f"rev {event.revision}: {key} held {count} times"
                for key, count in by_key.items()
                if count > 1
            )
        elif event.type in ended and event.lease_id in live:
            item = live.pop(event.lease_id)
            live_item.pop(item, None)
    return problems


@pytest.mark.parametrize("batched", [False, True], ids=["single", "batched"])
async def test_two_coordinators_many_workers_keep_every_invariant(
    servers: tuple[list[str], str], pg_url: str, redis: str, batched: bool
) -> None:
    """Batched: each worker finishes the leases of one Lease call with one BatchComplete and
    one BatchFail (each entry fenced on its own), under the same checks."""
    (a, b), admin_token = servers
    admin = WorkcoordClient(a, admin_token)
    db = create_async_engine(pg_url, pool_size=2)
    clients: list[WorkcoordClient] = [admin]
    cid = ""
    try:
        cid, secret, classes, exclusive = await setup_work(admin)
        on = [WorkcoordClient(a, secret), WorkcoordClient(b, secret)]
        clients.extend(on)
        tally = Tally()
        done = asyncio.Event()
        began = time.monotonic()
        tasks = [
            asyncio.create_task(
                worker_loop(
                    on[n % 2],
                    cid,
                    f"w{n}",
                    "machine" if n % 3 else "agent",
                    tally,
                    done,
                    n,
                    batched,
                )
            )
            for n in range(WORKERS)
        ]
        watcher = asyncio.create_task(sampler(db, cid, tally, done))
        try:
            # Until every item is terminal (the sampler sees it), however long that takes; a
            # worker only stops early on an error, which ends the run (its leases would hold
            # their items forever: no recovery runs here) and is reported below.
            running: set[asyncio.Task[None]] = {watcher, *tasks}
            while watcher in running:
                stopped, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                if stopped - {watcher}:
                    break
        finally:
            done.set()
            results = await asyncio.gather(*tasks, watcher, return_exceptions=True)
        elapsed = time.monotonic() - began
        errors = [r for r in results if isinstance(r, BaseException)]
        assert errors == [], errors[:3]
        assert tally.violations == [], tally.violations[:5]

        async with db.connect() as conn:
            open_items = (await conn.execute(OPEN_ITEMS, {"c": cid})).scalar_one()
        assert open_items == 0, f"{open_items} items still open after {elapsed:.1f}s: {tally}"

        events = await all_events(admin, cid)
        assert replay(events, classes, exclusive) == []
        most_live = peak_live(events, classes)
        succeeded = Counter(e.item_id for e in events if e.type == event_pb2.Event.ITEM_SUCCEEDED)
        dead = {e.item_id for e in events if e.type == event_pb2.Event.ITEM_DEAD_LETTERED}
        assert set(succeeded) | dead == set(classes)
        assert not set(succeeded) & dead
        assert max(succeeded.values()) == 1
        assert tally.completed == len(succeeded)
        # The run really contended: every slot was in use at some point (by the event log, not
        # by the sampler's luck), on both servers.
        assert most_live == Counter(CAPACITY), most_live
        assert tally.samples > 0
        assert tally.released > 0 and tally.failed > 0 and tally.heartbeats > 0
        assert tally.by_server[0] > 0 and tally.by_server[1] > 0, tally.by_server
        # Leases of 120 s never expire during the run: no worker may have been fenced.
        assert tally.lease_lost == 0
    finally:
        for client in clients:
            await client.close()
        await db.dispose()
        if cid:
            await delete_redis_keys([cid], redis)


FINISHING_LANES = 30


async def test_two_coordinators_finish_every_lane_whose_last_items_complete_at_once(
    servers: tuple[list[str], str], redis: str
) -> None:
    """Lanes of two items, the first placed on a worker of one server, the second on a worker
    of the other; every item is leased first, then all are completed at once, so each server's
    group of completes holds one item of every lane and the two groups start together. A
    lane's follow-up sees what the other group committed only because one group of worker
    writes runs at a time per coordinator (their advisory lock; docs/architecture.md, "Who
    waits for whom"): every lane must end DONE, with one LANE_DONE."""
    (a, b), admin_token = servers
    admin = WorkcoordClient(a, admin_token)
    clients: list[WorkcoordClient] = [admin]
    cid = ""
    try:
        org = f"org-{secrets.token_hex(4)}"
        await admin.admin.CreateOrg(admin_pb2.CreateOrgRequest(org=admin_pb2.Org(slug=org)))
        cid = await create_coordinator(admin, org, class_capacity={"machine": 2 * FINISHING_LANES})
        key = await create_work_key(admin, [cid], org=org, display_name="finishers")
        lane_ids = []
        for n in range(FINISHING_LANES):
            items = [
                lane_pb2.Item(
                    key=f"l{n}{side}",
                    kind=lane_pb2.Item.TASK,
                    worker_class="machine",
                    placement=policy_pb2.Placement(worker_id=f"{side}{n}"),
                )
                for side in "ab"
            ]
            created = await admin.lanes.CreateLane(
                lane_pb2.CreateLaneRequest(
                    coordinator_id=cid,
                    lane=lane_pb2.Lane(title=f"l{n}", template=lane_pb2.Lane.CUSTOM, items=items),
                )
            )
            lane_ids.append(created.lane.lane_id)
        on = {"a": WorkcoordClient(a, key.secret), "b": WorkcoordClient(b, key.secret)}
        clients.extend(on.values())
        leased = 0
        all_leased = asyncio.Event()

        async def finisher(side: str, n: int) -> None:
            nonlocal leased
            client = on[side]
            request = worker_pb2.LeaseRequest(
                coordinator_id=cid,
                worker_id=f"{side}{n}",
                worker_class="machine",
                max_items=1,
                lease_seconds=120,
                wait_seconds=5,
                run_identity=identity(SystemClock(), pid=3000 + n),
            )
            leases: Sequence[worker_pb2.Lease] = []
            while not leases:
                leases = (await client.workers.Lease(request)).leases
            leased += 1
            if leased == 2 * FINISHING_LANES:
                all_leased.set()
            await all_leased.wait()
            ref = worker_pb2.CompleteRequest(
                coordinator_id=cid, lease_id=leases[0].lease_id, lease_token=leases[0].lease_token
            )
            answer = await client.workers.BatchComplete(
                worker_pb2.BatchCompleteRequest(coordinator_id=cid, requests=[ref])
            )
            assert answer.results[0].status.code == 0, answer.results[0].status

        await asyncio.gather(*(finisher(side, n) for side in "ab" for n in range(FINISHING_LANES)))
        events = await all_events(admin, cid)
        done = Counter(e.lane_id for e in events if e.type == event_pb2.Event.LANE_DONE)
        assert done == Counter(dict.fromkeys(lane_ids, 1))
        for lane_id in lane_ids:
            got = await admin.lanes.GetLane(
                lane_pb2.GetLaneRequest(coordinator_id=cid, lane_id=lane_id)
            )
            assert got.lane.state == lane_pb2.Lane.DONE, lane_id
    finally:
        for client in clients:
            await client.close()
        if cid:
            await delete_redis_keys([cid], redis)
