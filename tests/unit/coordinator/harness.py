"""Helpers shared by the coordinator's unit tests and the property tests on real databases:
principals, a ready-made org and work coordinator, specs, run identities, snapshots."""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass
from typing import Any

from tests.support.invariants import check_invariants
from workcoord.coordinator.domain.auth import (
    Capability,
    OrgRole,
    Principal,
    PrincipalKind,
)
from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.domain.inputs import (
    CreateCoordinatorInput,
    CreateLaneInput,
    LeaseInput,
    ListEventsInput,
)
from workcoord.coordinator.domain.model import Coordinator, EventType, Scope, Template
from workcoord.coordinator.domain.ports import Store
from workcoord.coordinator.domain.results import GrantedLease, LaneDetail
from workcoord.coordinator.domain.specs import (
    CoordinatorSpec,
    ItemSpec,
    LaneSpec,
    LeaseAsk,
    RunIdentity,
)
from workcoord.kit.clock import Clock

ADMIN = Principal(kind=PrincipalKind.USER, id="usr_admin", platform_admin=True)


@dataclass(slots=True)
class World:
    """An org with one ORG work coordinator and principals of every kind for it."""

    org_slug: str
    coordinator: Coordinator
    worker: Principal  # a work key with READ, LEASE and WRITE on the coordinator
    org_admin: Principal  # a human admin of the org

    @property
    def cid(self) -> str:
        return self.coordinator.coordinator_id


def work_key(
    coordinator_ids: set[str], capabilities: set[Capability], org_slug: str = ""
) -> Principal:
    return Principal(
        kind=PrincipalKind.WORK_KEY,
        id=f"key_{uuid.uuid4().hex[:8]}",
        org_slug=org_slug,
        capabilities=frozenset(capabilities),
        coordinator_ids=frozenset(coordinator_ids),
    )


def org_user(roles: dict[str, OrgRole]) -> Principal:
    return Principal(kind=PrincipalKind.USER, id=f"usr_{uuid.uuid4().hex[:8]}", org_roles=roles)


async def make_world(engine: Engine, capacities: dict[str, int] | None = None) -> World:
    """A fresh org (uniquely named, so many worlds share one database) and its coordinator."""
    slug = f"org-{uuid.uuid4().hex[:10]}"
    await engine.membership.create_org(ADMIN, slug, "Test org")
    changes: dict[str, Any] = {"digest_owner": f"ops@{slug}.test"}
    if capacities is not None:
        changes["class_capacity"] = capacities
    coordinator = await engine.coordinators.create_coordinator(
        ADMIN,
        CreateCoordinatorInput(
            spec=CoordinatorSpec(scope=Scope.ORG, org_slug=slug, changes=changes)
        ),
    )
    worker = work_key(
        {coordinator.coordinator_id},
        {Capability.READ, Capability.LEASE, Capability.WRITE},
        slug,
    )
    return World(slug, coordinator, worker, org_user({slug: OrgRole.ORG_ADMIN}))


def task(key: str, worker_class: str = "codex", **kwargs: Any) -> ItemSpec:
    kwargs.setdefault("title", f"task {key}")
    return ItemSpec(key=key, worker_class=worker_class, **kwargs)


def lane_spec(*items: ItemSpec, **kwargs: Any) -> LaneSpec:
    kwargs.setdefault("title", "a lane")
    return LaneSpec(template=Template.CUSTOM, items=list(items), **kwargs)


def run_identity(clock: Clock, pid: int = 4242, agent_id: str = "agent-1") -> RunIdentity:
    return RunIdentity(
        pid=pid,
        agent_id=agent_id,
        engine="codex",
        account="ci-bot",
        hostname="host-1",
        worktree_path="/srv/work/tree",
        branch="main",
        started_at=clock.now(),
    )


async def snapshot(store: Store, coordinator_id: str) -> dict[str, Any]:
    """Everything a worker write could change in one work coordinator, as plain data."""
    async with store.read() as reader:
        coordinator = await reader.get_coordinator(coordinator_id)
        assert coordinator is not None
        lanes = await reader.list_lanes(coordinator_id, None, None, 10_000)
        lane_ids = [lane.lane_id for lane in lanes]
        items = await reader.lane_items(lane_ids) if lane_ids else []
        attempts = await reader.item_attempts([i.item_id for i in items]) if items else []
        events = await reader.list_events(coordinator_id, 0, 100_000, "", "")
    return {
        "revision": coordinator.revision,
        "lanes": sorted((asdict(lane) for lane in lanes), key=lambda d: d["lane_id"]),
        "items": sorted((asdict(i) for i in items), key=lambda d: d["item_id"]),
        "attempts": sorted((asdict(a) for a in attempts), key=lambda d: d["lease_id"]),
        "events": len(events),
    }


# ------------------------------------------------------------ engine calls of the unit tests

PRIVATE = "private-input-7f3a"  # an input value no read, view or event may show


async def lease_items(
    engine: Engine,
    world: World,
    worker_class: str = "codex",
    *,
    max_items: int = 1,
    lease_seconds: int = 60,
    worker_id: str = "w1",
    identity: RunIdentity | None = None,
    wait_seconds: int = 0,
) -> list[GrantedLease]:
    ask = LeaseAsk(worker_id, worker_class, max_items, lease_seconds, wait_seconds, identity)
    return await engine.leasing.lease(world.worker, LeaseInput(coordinator_id=world.cid, ask=ask))


async def lease_one(engine: Engine, world: World, **kwargs: Any) -> GrantedLease:
    granted = await lease_items(engine, world, **kwargs)
    assert len(granted) == 1
    return granted[0]


async def new_lane(engine: Engine, world: World, *items: Any, **kwargs: Any) -> LaneDetail:
    return await engine.lanes.create_lane(
        world.worker, CreateLaneInput(coordinator_id=world.cid, spec=lane_spec(*items, **kwargs))
    )


async def item_states(engine: Engine, world: World, lane_id: str) -> dict[str, str]:
    detail = await engine.lanes.get_lane(world.worker, world.cid, lane_id)
    return {i.key: i.state.value for i in detail.items}


async def event_types(engine: Engine, world: World) -> list[EventType]:
    events = (
        await engine.reads.list_events(
            world.worker, ListEventsInput(coordinator_id=world.cid, page_size=500)
        )
    ).events
    return [e.type for e in events]


async def assert_clean(store: Store, world: World, *private: str) -> None:
    async with store.read() as reader:
        assert await check_invariants(reader, world.cid, private_values=private) == []
