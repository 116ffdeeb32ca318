"""A scripted worker for the loop's tests: answers each call from a script, records every call.

It stands where :class:`~workcoord.client.worker.Worker` stands (the loop's ``WorkerCalls``
seam), so the tests decide exactly which call fails, how, and when a long-poll returns. The
clock is scripted too: retry pauses pass at once, heartbeat pauses wait for :meth:`tick`.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from workcoord.api.v1 import lane_pb2, worker_pb2
from workcoord.client.retries import RetryClock
from workcoord.kit.errors import WorkcoordError

# With leases of 300 s, heartbeats are due every 100 s; every retry pause is shorter.
LEASE_SECONDS = 300
HEARTBEAT_SECONDS = LEASE_SECONDS / 3


def lease(number: int = 1, kind: lane_pb2.Item.Kind = lane_pb2.Item.TASK) -> worker_pb2.Lease:
    return worker_pb2.Lease(
        lease_id=f"ls_{number}",
        lease_token=f"wcl_secret_{number}",
        attempt=1,
        item=worker_pb2.LeasedItem(item_id=f"it_{number}", lane_id="ln_1", kind=kind),
    )


@dataclass
class ScriptedClock:
    """Monotonic time that moves only by the pauses taken; heartbeat pauses wait for a tick."""

    now: float = 1000.0
    pauses: list[float] = field(default_factory=list)
    _ticks: asyncio.Queue[None] = field(default_factory=asyncio.Queue)

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        if seconds >= HEARTBEAT_SECONDS:
            await self._ticks.get()
        else:
            await asyncio.sleep(0)
        self.now += seconds

    def uniform(self, low: float, high: float) -> float:
        return (low + high) / 2

    def tick(self) -> None:
        """Let one heartbeat pause end."""
        self._ticks.put_nowait(None)

    def retry_clock(self) -> RetryClock:
        return RetryClock(monotonic=self.monotonic, sleep=self.sleep, uniform=self.uniform)


Answer = Exception | Any


class ScriptedWorker:
    """Answers from per-method scripts (FIFO); an exhausted ``lease`` script long-polls until
    cancelled, any other exhausted script answers success."""

    worker_class = "machine"

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.scripts: dict[str, deque[Answer]] = {}
        self.called = asyncio.Event()

    def script(self, method: str, *answers: Answer) -> None:
        self.scripts.setdefault(method, deque()).extend(answers)

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]

    def requests(self, method: str) -> list[dict[str, Any]]:
        return [arguments for name, arguments in self.calls if name == method]

    async def _answer(self, method: str, arguments: dict[str, Any]) -> Any:
        self.calls.append((method, arguments))
        self.called.set()
        queue = self.scripts.get(method)
        if not queue:
            if method == "lease":
                await asyncio.Event().wait()  # a long poll that finds nothing
            await asyncio.sleep(0)
            return None
        answer = queue.popleft()
        await asyncio.sleep(0)
        if isinstance(answer, WorkcoordError):
            raise answer
        return answer

    async def lease(self, **arguments: Any) -> list[worker_pb2.Lease]:
        answer: list[worker_pb2.Lease] = await self._answer("lease", arguments)
        return answer

    async def start(self, lease: worker_pb2.Lease, run_identity: lane_pb2.RunIdentity) -> None:
        await self._answer("start", {"lease": lease, "run_identity": run_identity})

    async def heartbeat(
        self, lease: worker_pb2.Lease, progress: str = "", *, usage: lane_pb2.Usage | None = None
    ) -> None:
        await self._answer("heartbeat", _with_usage({"lease": lease, "progress": progress}, usage))

    async def complete(
        self,
        lease: worker_pb2.Lease,
        evidence: lane_pb2.Evidence | None = None,
        *,
        usage: lane_pb2.Usage | None = None,
    ) -> None:
        await self._answer("complete", _with_usage({"lease": lease, "evidence": evidence}, usage))

    async def fail(
        self,
        lease: worker_pb2.Lease,
        message: str,
        *,
        error_type: str = "",
        retryable: bool = True,
        usage: lane_pb2.Usage | None = None,
    ) -> None:
        arguments: dict[str, Any] = {
            "lease": lease,
            "message": message,
            "error_type": error_type,
            "retryable": retryable,
        }
        await self._answer("fail", _with_usage(arguments, usage))

    async def checkpoint(
        self,
        lease: worker_pb2.Lease,
        checkpoint: lane_pb2.Checkpoint,
        *,
        usage: lane_pb2.Usage | None = None,
    ) -> None:
        arguments = {"lease": lease, "checkpoint": checkpoint}
        await self._answer("checkpoint", _with_usage(arguments, usage))

    async def release(self, lease: worker_pb2.Lease, reason: str = "") -> None:
        await self._answer("release", {"lease": lease, "reason": reason})


def _with_usage(arguments: dict[str, Any], usage: lane_pb2.Usage | None) -> dict[str, Any]:
    """The call's arguments, with ``usage`` only when the loop reported one (the scripts of
    calls without usage stay as they were)."""
    return {**arguments, "usage": usage} if usage is not None else arguments
