"""Inputs the field rules used to let through (each once stored or acted on):

an empty class name as a ``class_capacity`` key, a worktree path climbing out with ``..``,
``javascript:``/``file:`` evidence and ticket links, a one-second ``escalate_after``, a UTC
offset of ``+25:00`` in a REST time (json_format shifts the time by it), and a retry interval of
a nanosecond.
"""

from __future__ import annotations

import pytest
from google.protobuf import duration_pb2

from workcoord.api.v1 import lane_pb2, policy_pb2, work_coordinator_pb2, worker_pb2
from workcoord.kit import validation
from workcoord.kit.errors import InvalidArgument
from workcoord.kit.proto_json import parse_json_into

WC = work_coordinator_pb2


def _fields(message: object) -> list[str]:
    return [v.field for v in validation.validate(message)]  # type: ignore[arg-type]


def _coordinator(**fields: object) -> WC.CreateWorkCoordinatorRequest:
    return WC.CreateWorkCoordinatorRequest(
        work_coordinator=WC.WorkCoordinator(scope=WC.WorkCoordinator.ORG, org_slug="acme", **fields)  # type: ignore[arg-type]
    )


def test_an_empty_class_name_is_not_a_class() -> None:
    assert _fields(_coordinator(class_capacity={"": 3})) == ["work_coordinator.class_capacity[]"]
    assert _fields(_coordinator(class_capacity={"codex": 3})) == []


@pytest.mark.parametrize("path", ["/srv/../etc", "/srv/lanes/..", "/../x", "/a/b/../../c"])
def test_a_worktree_path_may_not_climb_out(path: str) -> None:
    start = worker_pb2.StartRequest(run_identity=lane_pb2.RunIdentity(worktree_path=path))
    assert "run_identity.worktree_path" in _fields(start)


def test_an_ordinary_worktree_path_passes() -> None:
    start = worker_pb2.StartRequest(
        run_identity=lane_pb2.RunIdentity(worktree_path="/srv/lanes/parser..v2/x")
    )
    assert "run_identity.worktree_path" not in _fields(start)


@pytest.mark.parametrize(
    "link",
    ["javascript:alert(1)", "file:///etc/passwd", "ftp://x/y", "data:text/html,x", "https://"],
)
def test_links_are_http_or_https(link: str) -> None:
    complete = worker_pb2.CompleteRequest(evidence=lane_pb2.Evidence(links=[link]))
    assert "evidence.links[0]" in _fields(complete)
    ticket = lane_pb2.LinkTicketRequest(
        ticket=lane_pb2.Ticket(tracker="github", key="a#1", url=link)
    )
    assert "ticket.url" in _fields(ticket)


def test_http_and_https_links_pass() -> None:
    complete = worker_pb2.CompleteRequest(
        evidence=lane_pb2.Evidence(links=["https://github.com/a/b/pull/1", "http://ci/run/2"])
    )
    assert not [f for f in _fields(complete) if f.startswith("evidence")]


def test_escalate_after_has_a_floor() -> None:
    short = _coordinator(escalate_after=duration_pb2.Duration(seconds=1))
    assert _fields(short) == ["work_coordinator.escalate_after"]
    assert _fields(_coordinator(escalate_after=duration_pb2.Duration(seconds=60))) == []


@pytest.mark.parametrize("offset", ["+25:00", "-24:00", "+23:60", "+99:99"])
def test_a_utc_offset_beyond_23_59_is_refused(offset: str) -> None:
    grant = WC.CreateGrantRequest()
    with pytest.raises(InvalidArgument) as caught:
        parse_json_into({"grant": {"expireTime": f"2030-01-01T00:00:00{offset}"}}, grant)
    assert [v.field for v in caught.value.field_violations] == ["grant.expire_time"]


@pytest.mark.parametrize("offset", ["Z", "+23:59", "-23:59", "+00:00"])
def test_offsets_within_a_day_pass(offset: str) -> None:
    grant = WC.CreateGrantRequest()
    parse_json_into({"grant": {"expireTime": f"2030-01-01T00:00:00{offset}"}}, grant)
    assert grant.grant.HasField("expire_time")


@pytest.mark.parametrize("field", ["initial_interval", "maximum_interval"])
def test_retry_intervals_have_a_floor_but_zero_still_inherits(field: str) -> None:
    def with_interval(duration: duration_pb2.Duration) -> WC.CreateWorkCoordinatorRequest:
        policy = policy_pb2.RetryPolicy()
        getattr(policy, field).CopyFrom(duration)
        return _coordinator(retry_policy=policy)

    path = f"work_coordinator.retry_policy.{field}"
    assert _fields(with_interval(duration_pb2.Duration(nanos=1))) == [path]
    assert _fields(with_interval(duration_pb2.Duration(nanos=9_999_999))) == [path]
    assert _fields(with_interval(duration_pb2.Duration(nanos=10_000_000))) == []
    assert _fields(with_interval(duration_pb2.Duration())) == []
