"""Workers, their fences, and the leases they are granted (the only place a lease token
leaves the coordinator: to the worker that was just granted it)."""

from __future__ import annotations

from datetime import datetime

from workcoord.api.v1 import worker_pb2
from workcoord.coordinator.domain.model import (
    JsonObject,
    Worker,
)
from workcoord.coordinator.domain.specs import GrantedLease

from .reports import checkpoint_to_pb
from .scalars import (
    from_dict,
    set_message,
    struct,
    ts,
)


def worker_from_pb(w: worker_pb2.Worker, now: datetime) -> Worker:
    return Worker(
        coordinator_id="",
        worker_id=w.worker_id,
        worker_class=w.worker_class,
        create_time=now,
        observe_time=now,
        capabilities=list(w.capabilities),
        toolchains=dict(w.toolchains),
        labels=dict(w.labels),
        cpu_count=w.cpu_count,
        memory_bytes=w.memory_bytes,
        disk_bytes=w.disk_bytes,
    )


def worker_to_pb(w: Worker, active_leases: int = 0) -> worker_pb2.Worker:
    out = worker_pb2.Worker(
        worker_id=w.worker_id,
        worker_class=w.worker_class,
        capabilities=w.capabilities,
        toolchains=w.toolchains,
        labels=w.labels,
        cpu_count=w.cpu_count,
        memory_bytes=w.memory_bytes,
        disk_bytes=w.disk_bytes,
        principal=w.principal,
        active_leases=active_leases,
    )
    set_message(out, "observe_time", ts(w.observe_time))
    set_message(out, "create_time", ts(w.create_time))
    if w.fence:
        set_message(out, "fence", worker_fence_to_pb(w.fence))
    return out


def worker_fence_to_pb(fence: JsonObject) -> worker_pb2.WorkerFence:
    """A stored fence (see the engine's fences module) as the contract shows it."""
    out = worker_pb2.WorkerFence(
        reason=str(fence.get("reason", "")),
        lease_id=str(fence.get("lease_id", "")),
        item_id=str(fence.get("item_id", "")),
        lane_id=str(fence.get("lane_id", "")),
        exclusive=[str(k) for k in fence.get("exclusive") or []],
    )
    for name, key in (("since", "since"), ("expire_time", "expire_time")):
        if fence.get(key):
            set_message(out, name, ts(datetime.fromisoformat(str(fence[key]))))
    return out


def lease_to_pb(granted: GrantedLease) -> worker_pb2.Lease:
    """A granted lease for the worker that holds it: the one place inputs and the token go out."""
    item = granted.item
    inputs = dict(granted.lane.inputs)
    inputs.update(item.inputs)
    leased = worker_pb2.LeasedItem(
        item_id=item.item_id,
        lane_id=item.lane_id,
        key=item.key,
        kind=item.kind.value,
        worker_class=item.worker_class,
        title=item.title,
        brief=item.brief,
        inputs=struct(inputs),
        exclusive_key=item.exclusive_key,
        continues_lease_id=granted.attempt.continues_lease_id,
        action_classes=item.action_classes,
    )
    if item.placement:
        from_dict(item.placement, leased.placement)
    if granted.checkpoint is not None:
        leased.checkpoint.CopyFrom(checkpoint_to_pb(granted.checkpoint))
    out = worker_pb2.Lease(
        lease_id=granted.attempt.lease_id,
        lease_token=granted.lease_token,
        attempt=granted.attempt.attempt,
        item=leased,
        status=granted.attempt.status.value,
    )
    set_message(out, "lease_expire_time", ts(granted.attempt.lease_expire_time))
    return out
