"""Workers, their fences, and the leases they are granted (the only place a lease token
leaves the coordinator: to the worker that was just granted it)."""

from __future__ import annotations

from datetime import datetime
from typing import cast

from workcoord.api.v1 import worker_pb2
from workcoord.coordinator.domain.documents import UnreadableDocument
from workcoord.coordinator.domain.model import (
    JsonObject,
    Worker,
)
from workcoord.coordinator.domain.results import GrantedLease
from workcoord.coordinator.domain.stops import Stop

from .fields import ToPb, copied
from .lanes import ITEM_SHOWN
from .reports import checkpoint_to_pb
from .scalars import placement_to_pb, set_message, struct, ts


def stop_to_pb(stop: Stop | None) -> worker_pb2.Stop | None:
    """A heartbeat's stop (None: go on, the field stays unset)."""
    if stop is None:
        return None
    reason = cast("worker_pb2.Stop.Reason", worker_pb2.Stop.Reason.Value(stop.reason.value))
    return worker_pb2.Stop(reason=reason, message=stop.message)


# Fields a worker describes itself with, of one name and type in the message and the record.
_DESCRIBED = ("worker_id", "worker_class", "cpu_count", "memory_bytes", "disk_bytes")
_WORKER = ToPb(
    worker_pb2.Worker,
    plain=(*_DESCRIBED, "capabilities", "toolchains", "labels", "principal", "worker_classes"),
    times=("observe_time", "create_time"),
)
# What a leased item shows the worker holding it, besides the inputs (of the lane and the item).
_LEASED_ITEM = ToPb(worker_pb2.LeasedItem, plain=ITEM_SHOWN, enums=("kind",))
# Never the token's hash: the token itself goes out, once, to the worker granted it.
_LEASE = ToPb(
    worker_pb2.Lease,
    plain=("lease_id", "attempt"),
    enums=("status",),
    times=("lease_expire_time", "deadline_time"),
)
# The keys of a stored fence (see the engine's fences module), by the message field each fills.
_FENCE_TEXT = ("reason", "lease_id", "item_id", "lane_id")
_FENCE_TIMES = ("since", "expire_time")


def worker_from_pb(w: worker_pb2.Worker, now: datetime) -> Worker:
    return Worker(
        **copied(w, _DESCRIBED),
        coordinator_id="",
        create_time=now,
        observe_time=now,
        capabilities=list(w.capabilities),
        toolchains=dict(w.toolchains),
        labels=dict(w.labels),
        worker_classes=list(w.worker_classes),
    )


def worker_to_pb(w: Worker, active_leases: int = 0) -> worker_pb2.Worker:
    return _WORKER(
        w,
        active_leases=active_leases,
        fence=worker_fence_to_pb(w.fence) if w.fence else None,
    )


def worker_fence_to_pb(fence: JsonObject) -> worker_pb2.WorkerFence:
    """A stored fence (the JSON the engine's fences module writes) as the contract shows it,
    read strictly: a key this release does not write, or a value of the wrong type, raises
    :class:`UnreadableDocument` rather than being dropped."""
    unknown = sorted(set(fence) - {*_FENCE_TEXT, *_FENCE_TIMES, "exclusive"})
    if unknown:
        raise UnreadableDocument("WorkerFence", unknown[0], "unknown field")
    for name in _FENCE_TEXT:
        if not isinstance(fence.get(name, ""), str):
            raise UnreadableDocument("WorkerFence", name, "is not a string")
    exclusive = fence.get("exclusive") or []
    if not isinstance(exclusive, list) or not all(isinstance(k, str) for k in exclusive):
        raise UnreadableDocument("WorkerFence", "exclusive", "is not a list of strings")
    out = worker_pb2.WorkerFence(
        **{name: fence.get(name, "") for name in _FENCE_TEXT}, exclusive=exclusive
    )
    for name in _FENCE_TIMES:
        if fence.get(name):
            try:
                when = datetime.fromisoformat(str(fence[name]))
            except ValueError:
                raise UnreadableDocument("WorkerFence", name, "is not an ISO 8601 time") from None
            set_message(out, name, ts(when))
    return out


def lease_to_pb(granted: GrantedLease) -> worker_pb2.Lease:
    """A granted lease for the worker that holds it: the one place inputs and the token go out."""
    item = granted.item
    inputs = dict(granted.lane.inputs)
    inputs.update(item.inputs)
    checkpoint = granted.checkpoint
    leased = _LEASED_ITEM(
        item,
        inputs=struct(inputs),
        continues_lease_id=granted.attempt.continues_lease_id,
        checkpoint=checkpoint_to_pb(checkpoint) if checkpoint is not None else None,
    )
    placement_to_pb(item.placement, leased.placement)
    return _LEASE(granted.attempt, lease_token=granted.lease_token, item=leased)
