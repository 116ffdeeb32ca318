"""``FeedService.Watch``: the live feed as a gRPC server stream (the gateway bridges it to the
WebSocket). The feed itself lives in :mod:`workcoord.coordinator.domain.feed`; this module hands
it the caller's credential and maps frames to protobuf."""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import AsyncIterator

from workcoord.api.v1 import feed_pb2, feed_pb2_grpc
from workcoord.coordinator.domain.auth import Principal
from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.domain.feed import (
    Credential,
    DeltaFrame,
    FeedHubs,
    FeedOptions,
    FeedSession,
    Frame,
    HelloFrame,
    PingFrame,
    ResyncFrame,
    SnapshotFrame,
)
from workcoord.kit.secrets import hash_secret
from workcoord.kit.settings import CoordinatorSettings
from workcoord.kit.wire import CallCredentials

from . import mapping as m
from .base import Context, EngineServicer
from .gate import caller

__all__ = ["FeedServicer", "feed_options", "frame_to_pb"]


class FeedServicer(EngineServicer, feed_pb2_grpc.FeedServiceServicer):
    """Serves ``Watch``; one :class:`FeedHubs` per servicer (so per coordinator process)."""

    def __init__(self, engine: Engine, options: FeedOptions | None = None) -> None:
        super().__init__(engine)
        self.hubs = FeedHubs(engine, options)

    async def Watch(
        self, request: feed_pb2.WatchRequest, context: Context
    ) -> AsyncIterator[feed_pb2.WatchResponse]:
        since = request.since if request.HasField("since") else None
        credential = self.credential(caller().credentials)
        session = FeedSession(self.hubs, request.coordinator_id, credential, since)
        async for frame in session.frames():
            yield frame_to_pb(frame)

    def credential(self, credentials: CallCredentials) -> Credential:
        """The caller's bearer credential or, without one, its browser session, for the feed to
        re-check from current state for as long as it lives (the gate checked it to open the
        call). Watch changes nothing, so a session needs no CSRF token here."""
        if credentials.bearer is None and credentials.session is not None:
            secret = credentials.session
            return Credential(
                f"session:{hash_secret(secret)}",
                functools.partial(self._session_principal, secret),
            )
        return Credential.bearer(self.engine, credentials.bearer)

    async def _session_principal(self, secret: str) -> Principal:
        caller = await self.engine.sessions.authenticate_session(secret, None, mutating=False)
        return caller.principal


# Every subscriber of a work coordinator gets the same deltas: map each one once. Keyed by
# (coordinator, first, last revision), which names exactly one sequence of events.
_DELTA_CACHE_SIZE = 256
_delta_cache: OrderedDict[tuple[str, int, int], feed_pb2.WatchResponse] = OrderedDict()


def frame_to_pb(frame: Frame) -> feed_pb2.WatchResponse:
    """One feed frame as the ``WatchResponse`` oneof."""
    if isinstance(frame, DeltaFrame):
        key = (frame.events[0].coordinator_id, frame.from_revision, frame.to_revision)
        cached = _delta_cache.get(key)
        if cached is None:
            cached = feed_pb2.WatchResponse(
                delta=feed_pb2.Delta(
                    from_revision=frame.from_revision,
                    to_revision=frame.to_revision,
                    events=[m.event_to_pb(e) for e in frame.events],
                )
            )
            _delta_cache[key] = cached
            if len(_delta_cache) > _DELTA_CACHE_SIZE:
                _delta_cache.popitem(last=False)
        return cached
    if isinstance(frame, PingFrame):
        return feed_pb2.WatchResponse(ping=feed_pb2.Ping(revision=frame.revision))
    if isinstance(frame, HelloFrame):
        return feed_pb2.WatchResponse(
            hello=feed_pb2.Hello(
                coordinator_id=frame.coordinator_id,
                revision=frame.revision,
                ping_seconds=frame.ping_seconds,
                resume_from=frame.resume_from,
            )
        )
    if isinstance(frame, SnapshotFrame):
        return feed_pb2.WatchResponse(
            snapshot=feed_pb2.Snapshot(revision=frame.revision, view=m.view_to_pb(frame.view))
        )
    if isinstance(frame, ResyncFrame):
        return feed_pb2.WatchResponse(
            resync=feed_pb2.Resync(reason=frame.reason, revision=frame.revision)
        )
    raise TypeError(f"not a feed frame: {frame!r}")


def feed_options(settings: CoordinatorSettings) -> FeedOptions:
    """The feed's tuning from the coordinator's settings."""
    return FeedOptions(
        ping_seconds=settings.feed_ping_seconds, poll_seconds=settings.feed_poll_seconds
    )
