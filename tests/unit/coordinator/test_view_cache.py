"""The view cache's bounds, and the converted-lane cache's identity rule (no I/O)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import grpc

from workcoord.api.v1 import work_coordinator_pb2
from workcoord.coordinator.domain.engine.view_cache import CachedLane, Snapshot, ViewCache
from workcoord.coordinator.domain.leasability import Surroundings
from workcoord.coordinator.domain.model import (
    Item,
    ItemKind,
    ItemState,
    Lane,
    LaneState,
    Template,
)
from workcoord.coordinator.domain.results import LaneDetail
from workcoord.coordinator.transport.mapping.lane_cache import LaneMessages, ViewResponses
from workcoord.coordinator.transport.mapping.lanes import lane_to_pb
from workcoord.coordinator.transport.view_wire import GET_VIEW_METHOD, ViewWireInterceptor

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def lane_detail(lane_id: str, items: int, state: ItemState = ItemState.QUEUED) -> LaneDetail:
    lane = Lane(
        lane_id=lane_id,
        coordinator_id="wc_a",
        title="t",
        template=Template.CUSTOM,
        priority=0,
        inputs={},
        state=LaneState.ACTIVE,
        paused=False,
        create_time=T0,
        update_time=T0,
    )
    return LaneDetail(
        lane=lane,
        items=[
            Item(
                item_id=f"{lane_id}-{n}",
                lane_id=lane_id,
                coordinator_id="wc_a",
                key=f"k{n}",
                kind=ItemKind.TASK,
                worker_class="machine",
                state=state,
                create_time=T0,
                update_time=T0,
            )
            for n in range(items)
        ],
    )


def snapshot(revision: int, *lanes: LaneDetail) -> Snapshot:
    return Snapshot(revision, {d.lane.lane_id: CachedLane.of(d) for d in lanes})


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_newer_snapshot_is_never_replaced_by_an_older_one() -> None:
    cache = ViewCache()
    cache.put("wc_a", snapshot(5, lane_detail("ln_a", 1)))
    cache.put("wc_a", snapshot(4))
    held = cache.get("wc_a")
    assert held is not None and held.revision == 5
    cache.put("wc_a", snapshot(6))
    held = cache.get("wc_a")
    assert held is not None and held.revision == 6


def test_the_least_recently_used_coordinators_go_first_past_the_item_bound() -> None:
    cache = ViewCache(max_items=10)
    cache.put("wc_a", snapshot(1, lane_detail("ln_a", 4)))
    cache.put("wc_b", snapshot(1, lane_detail("ln_b", 4)))
    assert cache.get("wc_a") is not None  # now the most recently used
    cache.put("wc_c", snapshot(1, lane_detail("ln_c", 4)))
    assert cache.get("wc_b") is None
    assert cache.get("wc_a") is not None and cache.get("wc_c") is not None
    cache.put("wc_d", snapshot(1, lane_detail("ln_d", 11)))  # larger than the bound: not kept
    assert cache.get("wc_d") is None and len(cache) == 2


def test_an_idle_coordinator_is_dropped() -> None:
    clock = Clock()
    cache = ViewCache(idle_seconds=60, monotonic=clock)
    cache.put("wc_a", snapshot(1))
    cache.put("wc_b", snapshot(1))
    clock.now = 50
    assert cache.get("wc_a") is not None  # used: stays
    clock.now = 100
    assert cache.get("wc_b") is None
    assert cache.get("wc_a") is not None


def _around(capacity: tuple[int, int], **changes: object) -> Surroundings:
    return replace(Surroundings(T0, {"machine": capacity}), **changes)  # type: ignore[arg-type]


def _same_objects(detail: LaneDetail, around: Surroundings) -> LaneDetail:
    """Another call's detail around the same objects, with ``around``."""
    return LaneDetail(
        detail.lane, detail.items, detail.blockers, detail.tickets, detail.attempts, around
    )


def test_a_converted_lane_is_reused_only_for_the_same_objects_and_capacity() -> None:
    messages = LaneMessages()
    detail = lane_detail("ln_a", 2)
    detail.surroundings = _around((0, 1))
    first = messages.lane(detail)
    assert first == lane_to_pb(detail)
    assert messages.lane(detail) is first
    # The same objects, the same capacity of its queued items' class: reused.
    again = _same_objects(detail, Surroundings(T0, {"machine": (0, 1), "gpu": (3, 3)}))
    assert messages.lane(again) is first
    # The class of its queued items filled up: converted again, with the new label.
    full = _same_objects(detail, _around((1, 1)))
    relabelled = messages.lane(full)
    assert relabelled is not first and relabelled.next_action == "wait: machine 1/1"
    # An equal but distinct lane object (read afresh): converted again.
    fresh = lane_detail("ln_a", 2)
    fresh.surroundings = _around((1, 1))
    assert messages.lane(fresh) is not relabelled


def test_a_converted_lane_is_relabelled_when_a_backoff_ends_or_a_key_is_taken() -> None:
    messages = LaneMessages()
    detail = lane_detail("ln_a", 1)
    detail.items[0].not_before = T0 + timedelta(seconds=5)
    detail.items[0].exclusive_key = "repo:a"
    detail.surroundings = _around((0, 1))
    assert messages.lane(detail).next_action == "wait: backoff"
    # Nothing of the lane changed, but its backoff ran out.
    later = _around((0, 1), now=T0 + timedelta(seconds=5))
    assert messages.lane(_same_objects(detail, later)).next_action == "lease task (machine)"
    # Another lane's live lease took its key.
    taken = replace(later, key_holders={"repo:a": "ls_1"})
    relabelled = messages.lane(_same_objects(detail, taken))
    assert relabelled.next_action == "wait: repo:a held"
    assert messages.lane(_same_objects(detail, taken)) is relabelled


def test_converted_lanes_are_bounded_by_their_items() -> None:
    messages = LaneMessages(max_items=5)
    for n in range(4):
        messages.lane(lane_detail(f"ln_{n}", 2))
    assert len(messages) == 2


def test_an_unchanged_answer_is_reused_and_a_changed_one_rebuilt() -> None:
    responses = ViewResponses()
    lanes = [lane_to_pb(lane_detail("ln_a", 1)), lane_to_pb(lane_detail("ln_b", 1))]
    head = work_coordinator_pb2.View(revision=7)
    first = responses.response("wc_a", head, lanes)
    assert list(first.view.lanes) == lanes and first.view.revision == 7
    assert responses.response("wc_a", work_coordinator_pb2.View(revision=7), list(lanes)) is first
    # Another revision, or another (even equal) lane message: a new answer.
    assert responses.response("wc_a", work_coordinator_pb2.View(revision=8), lanes) is not first
    copied = [lanes[0], lane_to_pb(lane_detail("ln_b", 1))]
    again = responses.response("wc_a", work_coordinator_pb2.View(revision=8), copied)
    assert again == responses.response("wc_a", work_coordinator_pb2.View(revision=8), copied)
    assert responses.response("wc_b", head, lanes) is not first


def test_answers_are_bounded_by_their_items() -> None:
    responses = ViewResponses(max_items=3)
    lanes = [lane_to_pb(lane_detail("ln_a", 2))]
    head = work_coordinator_pb2.View(revision=1)
    first = responses.response("wc_a", head, lanes)
    responses.response("wc_b", head, lanes)  # 4 items in all: wc_a goes
    assert len(responses) == 1
    assert responses.response("wc_a", head, lanes) is not first
    big = [lane_to_pb(lane_detail("ln_b", 4))]
    responses.response("wc_c", head, big)  # larger than the bound: answered, not kept
    assert len(responses) == 1


def test_a_held_answer_is_serialized_once_and_any_other_as_usual() -> None:
    responses = ViewResponses()
    head = work_coordinator_pb2.View(revision=1)
    head.work_coordinator.coordinator_id = "wc_a"
    answer = responses.response("wc_a", head, [lane_to_pb(lane_detail("ln_a", 2))])
    calls: list[object] = []

    def serialize(message: work_coordinator_pb2.GetViewResponse) -> bytes:
        calls.append(message)
        return message.SerializeToString()

    wire = responses.serialized(answer, serialize)
    assert wire == answer.SerializeToString()
    assert responses.serialized(answer, serialize) is wire
    equal_copy = work_coordinator_pb2.GetViewResponse()
    equal_copy.CopyFrom(answer)
    assert responses.serialized(equal_copy, serialize) == wire
    assert calls == [answer, equal_copy]


def test_the_get_view_handler_gets_the_caching_serializer_and_no_other() -> None:
    def behavior(request: object, context: object) -> None:
        return None

    handler = grpc.unary_unary_rpc_method_handler(
        behavior,
        request_deserializer=work_coordinator_pb2.GetViewRequest.FromString,
        response_serializer=work_coordinator_pb2.GetViewResponse.SerializeToString,
    )
    interceptor = ViewWireInterceptor()
    wrapped = interceptor.wrap(handler, GET_VIEW_METHOD)
    assert wrapped.unary_unary is behavior
    assert wrapped.request_deserializer is handler.request_deserializer
    assert wrapped.response_serializer is not handler.response_serializer
    answer = work_coordinator_pb2.GetViewResponse()
    answer.view.revision = 3
    serializer = wrapped.response_serializer
    assert serializer is not None
    assert serializer(answer) == answer.SerializeToString()
    other = "/workcoord.api.v1.WorkCoordinatorService/Explain"
    assert interceptor.wrap(handler, other) is handler
