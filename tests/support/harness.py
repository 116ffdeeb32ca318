"""A started coordinator with everything a contract test needs, and small call helpers.

:class:`Stack` is an in-process coordinator (``start_coordinator`` on port 0) with a
:class:`TestClock`, the bootstrap admin's client, the recovery service's client, an org, an ORG
work coordinator and a work key holding READ, LEASE and WRITE. The helpers build requests with
the fewest keystrokes a test can read at a glance; they never hide an assertion.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypedDict, TypeVar

import pytest
from google.protobuf import json_format
from google.protobuf.message import Message

from workcoord.api.v1 import (
    admin_pb2,
    event_pb2,
    lane_pb2,
    maintenance_pb2,
    policy_pb2,
    work_coordinator_pb2,
    worker_pb2,
)
from workcoord.client import WorkcoordClient
from workcoord.coordinator.server import RunningCoordinator, start_coordinator
from workcoord.gateway.server import RunningGateway, start_gateway
from workcoord.kit.clock import Clock, ManualClock
from workcoord.kit.errors import WorkcoordError
from workcoord.kit.settings import CoordinatorSettings, GatewaySettings

__all__ = [
    "ALL_CAPABILITIES",
    "Stack",
    "TestClock",
    "all_events",
    "expect_error",
    "identity",
    "start_gateway_for",
    "start_stack",
    "task",
    "to_json",
]

Capability = admin_pb2.WorkKey.Capability
ALL_CAPABILITIES: tuple[admin_pb2.WorkKey.Capability, ...] = (
    Capability.READ,
    Capability.LEASE,
    Capability.WRITE,
)

_E = TypeVar("_E", bound=WorkcoordError)
_T = TypeVar("_T")


class _Fence(TypedDict):
    coordinator_id: str
    lease_id: str
    lease_token: str


class TestClock(ManualClock):
    """A :class:`ManualClock` whose monotonic reading also follows real time.

    Wall-clock time (lease expiry, backoff, ``started_at``) moves only by :meth:`advance`, so no
    test sleeps for a lease to expire. The monotonic reading measures real waits too: a
    long-poll ``Lease`` with ``wait_seconds`` then ends after that many real seconds, as in
    production (with a plain ManualClock its deadline would never come).

    ``real_time=False`` freezes the monotonic reading too (it moves only by :meth:`advance`), for
    tests of pauses and caches measured on it, whose outcome must not depend on how fast a
    loaded machine runs them.
    """

    __test__ = False  # not a test class, whatever pytest thinks of its name

    def __init__(self, start: datetime | None = None, *, real_time: bool = True) -> None:
        super().__init__(start)
        self._real_origin = time.monotonic()
        self._real_time = real_time

    def monotonic(self) -> float:
        if not self._real_time:
            return super().monotonic()
        return super().monotonic() + (time.monotonic() - self._real_origin)


@dataclass
class Stack:
    """A running coordinator and the principals, org and work coordinator of one test."""

    backend: str
    database_url: str
    redis_url: str | None
    clock: TestClock
    running: RunningCoordinator
    admin_token: str
    service_key: str
    admin: WorkcoordClient
    service: WorkcoordClient
    org: str
    coordinator_id: str
    key_id: str
    key_secret: str
    worker: WorkcoordClient
    clients: list[WorkcoordClient] = field(default_factory=list)
    extra_coordinators: list[str] = field(default_factory=list)

    @property
    def address(self) -> str:
        return self.running.address

    @property
    def cid(self) -> str:
        return self.coordinator_id

    @property
    def coordinator_ids(self) -> list[str]:
        """Every work coordinator this stack created (their Redis streams are cleaned up)."""
        return [self.coordinator_id, *self.extra_coordinators]

    def client(self, token: str | None) -> WorkcoordClient:
        """A client with ``token`` (closed with the stack)."""
        client = WorkcoordClient(self.address, token)
        self.clients.append(client)
        return client

    async def close(self) -> None:
        for client in self.clients:
            await client.close()
        await self.running.stop(0)

    # ---------------------------------------------------------------- administration

    async def new_coordinator(
        self,
        *,
        class_capacity: Mapping[str, int] | None = None,
        retry_policy: policy_pb2.RetryPolicy | None = None,
        org: str | None = None,
    ) -> str:
        """Another ORG work coordinator (of this test's org unless told otherwise)."""
        cid = await create_coordinator(
            self.admin, org or self.org, class_capacity=class_capacity, retry_policy=retry_policy
        )
        self.extra_coordinators.append(cid)
        return cid

    async def work_key(
        self,
        capabilities: Sequence[admin_pb2.WorkKey.Capability] = ALL_CAPABILITIES,
        coordinator_ids: Sequence[str] | None = None,
        org: str | None = None,
    ) -> tuple[str, WorkcoordClient]:
        """A new work key (its id) and a client holding it."""
        response = await create_work_key(
            self.admin, coordinator_ids or [self.cid], capabilities, org=org or self.org
        )
        return response.key_id, self.client(response.secret)

    # ---------------------------------------------------------------- lanes and items

    async def create_lane(
        self,
        *items: lane_pb2.Item,
        client: WorkcoordClient | None = None,
        coordinator_id: str | None = None,
        priority: int = 0,
        inputs: Mapping[str, Any] | None = None,
        title: str = "lane",
        retry_policy: policy_pb2.RetryPolicy | None = None,
    ) -> lane_pb2.Lane:
        lane = lane_pb2.Lane(
            title=title, template=lane_pb2.Lane.CUSTOM, priority=priority, items=list(items)
        )
        if inputs is not None:
            lane.inputs.update(dict(inputs))
        if retry_policy is not None:
            lane.retry_policy.CopyFrom(retry_policy)
        response = await (client or self.worker).lanes.CreateLane(
            lane_pb2.CreateLaneRequest(coordinator_id=coordinator_id or self.cid, lane=lane)
        )
        return response.lane

    async def get_item(
        self, item: lane_pb2.Item | worker_pb2.LeasedItem, coordinator_id: str | None = None
    ) -> lane_pb2.Item:
        response = await self.admin.lanes.GetItem(
            lane_pb2.GetItemRequest(
                coordinator_id=coordinator_id or self.cid,
                lane_id=item.lane_id,
                item_id=item.item_id,
            )
        )
        return response.item

    async def explain(self, item_id: str) -> work_coordinator_pb2.Explanation:
        response = await self.admin.coordinators.Explain(
            work_coordinator_pb2.ExplainRequest(coordinator_id=self.cid, item_id=item_id)
        )
        return response.explanation

    # ---------------------------------------------------------------- worker calls

    async def workers_report(
        self,
        worker_id: str,
        worker_class: str = "machine",
        labels: Mapping[str, str] | None = None,
        *,
        worker_classes: Sequence[str] = (),
    ) -> worker_pb2.Worker:
        response = await self.worker.workers.ReportWorker(
            worker_pb2.ReportWorkerRequest(
                coordinator_id=self.cid,
                worker=worker_pb2.Worker(
                    worker_id=worker_id,
                    worker_class=worker_class,
                    labels=dict(labels or {}),
                    worker_classes=list(worker_classes),
                ),
            )
        )
        return response.worker

    async def lease(
        self,
        worker_class: str = "machine",
        *,
        worker_id: str | None = None,
        max_items: int = 1,
        lease_seconds: int = 30,
        wait_seconds: int = 0,
        run_identity: lane_pb2.RunIdentity | None = None,
        client: WorkcoordClient | None = None,
        coordinator_id: str | None = None,
        worker_classes: Sequence[str] = (),
    ) -> list[worker_pb2.Lease]:
        request = worker_pb2.LeaseRequest(
            coordinator_id=coordinator_id or self.cid,
            # A worker id is bound to the classes it registered (or first asked for).
            worker_id=worker_id or f"{worker_class}-1",
            worker_class=worker_class,
            worker_classes=list(worker_classes),
            max_items=max_items,
            lease_seconds=lease_seconds,
            wait_seconds=wait_seconds,
        )
        if run_identity is not None:
            request.run_identity.CopyFrom(run_identity)
        response = await (client or self.worker).workers.Lease(request)
        return list(response.leases)

    async def start(
        self,
        lease: worker_pb2.Lease,
        run_identity: lane_pb2.RunIdentity | None = None,
        *,
        token: str | None = None,
    ) -> lane_pb2.Attempt:
        response = await self.worker.workers.Start(
            worker_pb2.StartRequest(
                **self._fence(lease, token), run_identity=run_identity or identity(self.clock)
            )
        )
        return response.attempt

    async def heartbeat(
        self, lease: worker_pb2.Lease, *, token: str | None = None, progress: str = ""
    ) -> datetime:
        response = await self.worker.workers.Heartbeat(
            worker_pb2.HeartbeatRequest(**self._fence(lease, token), progress=progress)
        )
        return response.lease_expire_time.ToDatetime(tzinfo=self.clock.now().tzinfo)

    async def complete(
        self, lease: worker_pb2.Lease, *, token: str | None = None, summary: str = "done"
    ) -> lane_pb2.Attempt:
        response = await self.worker.workers.Complete(
            worker_pb2.CompleteRequest(
                **self._fence(lease, token), evidence=lane_pb2.Evidence(summary=summary)
            )
        )
        return response.attempt

    async def fail(
        self, lease: worker_pb2.Lease, *, retryable: bool = True, token: str | None = None
    ) -> lane_pb2.Attempt:
        response = await self.worker.workers.Fail(
            worker_pb2.FailRequest(
                **self._fence(lease, token),
                error=lane_pb2.ErrorInfo(message="boom", type="Boom", retryable=retryable),
            )
        )
        return response.attempt

    async def release(
        self, lease: worker_pb2.Lease, *, token: str | None = None
    ) -> lane_pb2.Attempt:
        response = await self.worker.workers.Release(
            worker_pb2.ReleaseRequest(**self._fence(lease, token), reason="shutting down")
        )
        return response.attempt

    async def checkpoint(
        self, lease: worker_pb2.Lease, checkpoint: lane_pb2.Checkpoint
    ) -> lane_pb2.Attempt:
        response = await self.worker.workers.Checkpoint(
            worker_pb2.CheckpointRequest(**self._fence(lease), checkpoint=checkpoint)
        )
        return response.attempt

    def _fence(self, lease: worker_pb2.Lease, token: str | None = None) -> _Fence:
        """The fields fencing a write to ``lease`` (with ``token`` instead of its own if given)."""
        return _Fence(
            coordinator_id=self.cid,
            lease_id=lease.lease_id,
            lease_token=token if token is not None else lease.lease_token,
        )

    async def lease_and_start(
        self, worker_class: str = "machine", **kwargs: Any
    ) -> worker_pb2.Lease:
        """Lease exactly one item and start it."""
        leases = await self.lease(worker_class, **kwargs)
        assert len(leases) == 1, leases
        await self.start(leases[0])
        return leases[0]

    async def until_asked(self, worker_id: str, waiting: asyncio.Future[_T]) -> None:
        """Return once the waiting Lease ``waiting`` of ``worker_id`` made its first look (that
        look notes the worker's ask, so the worker is listed): it now waits. A generous
        deadline, no fixed sleep; the Lease must not have ended meanwhile."""
        async with asyncio.timeout(30):
            while True:
                if waiting.done():
                    raise AssertionError(f"the Lease ended before it waited: {waiting.result()!r}")
                listed = await self.admin.workers.ListWorkers(
                    worker_pb2.ListWorkersRequest(coordinator_id=self.cid)
                )
                if any(w.worker_id == worker_id for w in listed.workers):
                    return
                await asyncio.sleep(0.05)

    async def maintain(
        self, coordinator_id: str | None = None
    ) -> maintenance_pb2.RunMaintenanceResponse:
        return await self.service.maintenance.RunMaintenance(
            maintenance_pb2.RunMaintenanceRequest(coordinator_id=coordinator_id or self.cid)
        )

    async def events(self, coordinator_id: str | None = None) -> list[event_pb2.Event]:
        return await all_events(self.admin, coordinator_id or self.cid)


# -------------------------------------------------------------------- free helpers


def task(
    key: str,
    worker_class: str = "machine",
    *,
    depends_on: Sequence[str] = (),
    exclusive_key: str = "",
    priority: int = 0,
    placement: policy_pb2.Placement | None = None,
    inputs: Mapping[str, Any] | None = None,
    retry_policy: policy_pb2.RetryPolicy | None = None,
    title: str = "",
) -> lane_pb2.Item:
    """A TASK item of a CUSTOM lane."""
    item = lane_pb2.Item(
        key=key,
        kind=lane_pb2.Item.TASK,
        worker_class=worker_class,
        depends_on=list(depends_on),
        exclusive_key=exclusive_key,
        priority=priority,
        title=title,
    )
    if placement is not None:
        item.placement.CopyFrom(placement)
    if inputs is not None:
        item.inputs.update(dict(inputs))
    if retry_policy is not None:
        item.retry_policy.CopyFrom(retry_policy)
    return item


def identity(clock: Clock | None = None, **overrides: Any) -> lane_pb2.RunIdentity:
    """A valid run identity started at ``clock``'s current time (the server's), or a minute
    ago by the real clock when there is none (a server in another process)."""
    values: dict[str, Any] = {
        "pid": 4242,
        "agent_id": "agent-7",
        "engine": "codex",
        "account": "fleet-bot",
        "hostname": "build-3",
        "worktree_path": "/srv/lanes/parser",
        "branch": "fix/parser",
    }
    default_start = clock.now() if clock else datetime.now(UTC) - timedelta(minutes=1)
    started_at = overrides.pop("started_at", default_start)
    values.update(overrides)
    out = lane_pb2.RunIdentity(**values)
    out.started_at.FromDatetime(started_at)
    return out


async def expect_error(call: Awaitable[Any], error: type[_E], reason: str | None = None) -> _E:
    """Await ``call``, which must fail with ``error`` (and ``reason`` if given)."""
    with pytest.raises(error) as caught:
        await call
    if reason is not None:
        assert caught.value.reason == reason, caught.value
    return caught.value


def violated_fields(err: WorkcoordError) -> set[str]:
    return {v.field for v in err.field_violations}


async def all_events(
    client: WorkcoordClient, coordinator_id: str, page_size: int = 500
) -> list[event_pb2.Event]:
    """Every event of ``coordinator_id``, following page tokens."""
    events: list[event_pb2.Event] = []
    token = ""
    while True:
        response = await client.coordinators.ListEvents(
            work_coordinator_pb2.ListEventsRequest(
                coordinator_id=coordinator_id, page_size=page_size, page_token=token
            )
        )
        events.extend(response.events)
        token = response.next_page_token
        if not token:
            return events


def to_json(message: Message) -> str:
    return json_format.MessageToJson(message)


def event_type(event: event_pb2.Event) -> str:
    return event_pb2.Event.Type.Name(event.type)


# -------------------------------------------------------------------- start-up


async def create_coordinator(
    admin: WorkcoordClient,
    org: str,
    *,
    class_capacity: Mapping[str, int] | None = None,
    retry_policy: policy_pb2.RetryPolicy | None = None,
) -> str:
    wc = work_coordinator_pb2.WorkCoordinator(
        scope=work_coordinator_pb2.WorkCoordinator.ORG,
        org_slug=org,
        display_name="tests",
        digest_owner=f"ops@{org}.test",
    )
    if class_capacity is not None:
        wc.class_capacity.update(dict(class_capacity))
    if retry_policy is not None:
        wc.retry_policy.CopyFrom(retry_policy)
    response = await admin.coordinators.CreateWorkCoordinator(
        work_coordinator_pb2.CreateWorkCoordinatorRequest(work_coordinator=wc)
    )
    return response.work_coordinator.coordinator_id


async def create_work_key(
    admin: WorkcoordClient,
    coordinator_ids: Sequence[str],
    capabilities: Sequence[admin_pb2.WorkKey.Capability] = ALL_CAPABILITIES,
    *,
    org: str = "",
    display_name: str = "",
) -> admin_pb2.CreateWorkKeyResponse:
    """A work key on ``coordinator_ids`` (with no ``org`` it takes their org); the answer holds
    its id and its secret."""
    return await admin.admin.CreateWorkKey(
        admin_pb2.CreateWorkKeyRequest(
            work_key=admin_pb2.WorkKey(
                display_name=display_name or f"key-{secrets.token_hex(3)}",
                org_slug=org,
                coordinator_ids=list(coordinator_ids),
                capabilities=list(capabilities),
            )
        )
    )


async def start_coordinator_for(
    database_url: str,
    redis_url: str | None,
    clock: ManualClock,
    admin_token: str,
    service_key: str,
    **settings_overrides: Any,
) -> RunningCoordinator:
    # By alias, as the environment spells them (model_validate reads no environment).
    settings = CoordinatorSettings.model_validate(
        {
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "listen_coordinator": "127.0.0.1:0",
            "bootstrap_admin_token": admin_token,
            "service_key": service_key,
            **settings_overrides,
        }
    )
    return await start_coordinator(settings, clock=clock)


async def start_gateway_for(
    coordinator_address: str, recovery_address: str = "", **settings_overrides: Any
) -> RunningGateway:
    """A gateway on a free loopback port in front of the coordinator and the recovery service
    (by default the coordinator's address: fine while no RecoveryService route is called).

    ``settings_overrides`` are extra :class:`GatewaySettings` fields (``oidc_issuer``…).
    """
    return await start_gateway(
        GatewaySettings(
            listen_gateway="127.0.0.1:0",
            coordinator_address=coordinator_address,
            recovery_address=recovery_address or coordinator_address,
            **settings_overrides,
        )
    )


async def start_stack(
    backend: str,
    database_url: str,
    redis_url: str | None,
    *,
    clock: TestClock | None = None,
    **settings_overrides: Any,
) -> Stack:
    """Start a coordinator and create an org, an ORG work coordinator and a full work key.

    ``settings_overrides`` are extra :class:`CoordinatorSettings` fields (``feed_ping_seconds``…).
    """
    clock = clock or TestClock()
    admin_token = f"wcadm_test_{secrets.token_hex(16)}"
    service_key = f"wcsvc_test_{secrets.token_hex(16)}"
    running = await start_coordinator_for(
        database_url, redis_url, clock, admin_token, service_key, **settings_overrides
    )
    admin = WorkcoordClient(running.address, admin_token)
    service = WorkcoordClient(running.address, service_key)
    org = f"org-{secrets.token_hex(4)}"
    await admin.admin.CreateOrg(
        admin_pb2.CreateOrgRequest(org=admin_pb2.Org(slug=org, display_name="Tests"))
    )
    cid = await create_coordinator(admin, org)
    key = await create_work_key(admin, [cid], org=org, display_name="fleet")
    worker = WorkcoordClient(running.address, key.secret)
    return Stack(
        backend=backend,
        database_url=database_url,
        redis_url=redis_url,
        clock=clock,
        running=running,
        admin_token=admin_token,
        service_key=service_key,
        admin=admin,
        service=service,
        org=org,
        coordinator_id=cid,
        key_id=key.key_id,
        key_secret=key.secret,
        worker=worker,
        clients=[admin, service, worker],
    )


def seconds_between(a: datetime, b: datetime) -> float:
    return (b - a) / timedelta(seconds=1)
