"""The authorization matrix of policy fields: who may set each policy a lane or item carries
weaker than the work coordinator's (humans who may configure it, never a work key, whatever its
capabilities), and that a stricter value of the same field stays open to whoever may write.

Same world, columns and letters as ``test_authz_matrix`` (``authz_table`` explains them),
and every row runs over gRPC and over REST through the gateway. A row is named by the RPC, the
field and the value sent; the child work coordinator's review policy passes a review on to
INTEGRATE_THEN_SHIP, so ``on_pass: SHIP`` is weaker there.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from google.protobuf import duration_pb2, field_mask_pb2
from google.protobuf.message import Message

from tests.integration import authz_table, authz_world
from tests.integration import test_authz_matrix_rest as rest_matrix
from tests.support.harness import task
from workcoord.api.v1 import lane_pb2, policy_pb2, work_coordinator_pb2
from workcoord.gateway.routes import load_routes

pytestmark = [pytest.mark.pg, pytest.mark.redis, pytest.mark.xdist_group(name="authz-policies")]

# The matrix's module-scoped fixtures, registered here too (this module gets its own world).
world = authz_world.world
rest = rest_matrix.rest

L = lane_pb2
P = policy_pb2
W = work_coordinator_pb2
World = authz_world.World
COLUMNS = authz_table.COLUMNS
COLUMN_NAMES = authz_table.COLUMN_NAMES

WRITE = authz_table.WRITE  # a stricter value: whoever may write lanes
WEAKEN = "AANDDDDNUUNNDU"  # a weaker value: humans who may configure the child only
assert WEAKEN == authz_table.CONFIGURE

Shape = Callable[[], Message]  # a fresh lane (CreateLane) or item (CreateItem) with the field


def _standard(**review: Any) -> L.Lane:
    # Every stage of class person: nothing in the matrix leases it.
    classes = L.Lane.WorkerClasses(
        build="person", review="person", fix="person", integrate="person", ship="person"
    )
    return L.Lane(
        title="policy",
        template=L.Lane.STANDARD,
        worker_classes=classes,
        review_policy=P.ReviewPolicy(**review),
    )


def _custom(**retry: Any) -> L.Lane:
    return L.Lane(
        title="policy",
        template=L.Lane.CUSTOM,
        items=[task("q", "person")],
        retry_policy=P.RetryPolicy(**retry),
    )


def _item(**fields: Any) -> L.Item:
    item = task(f"i{secrets.token_hex(3)}", "person")
    for name, value in fields.items():
        if isinstance(value, Message):
            getattr(item, name).CopyFrom(value)
        elif isinstance(value, list):
            getattr(item, name).extend(value)
        else:
            setattr(item, name, value)
    return item


def _in_lane(**fields: Any) -> L.Lane:
    return L.Lane(title="policy", template=L.Lane.CUSTOM, items=[_item(**fields)])


def _seconds(n: int) -> duration_pb2.Duration:
    return duration_pb2.Duration(seconds=n)


# (row name, what to create, expected row). CreateItem rows add the item to the world's lane.
ROWS: list[tuple[str, Shape, str]] = [
    # review policy (STANDARD lanes)
    (
        "CreateLane review_policy.ship_requires_approval=false",
        lambda: _standard(ship_requires_approval=False),
        WEAKEN,
    ),
    (
        "CreateLane review_policy.ship_requires_approval=true",
        lambda: _standard(ship_requires_approval=True),
        WRITE,
    ),
    ("CreateLane review_policy.max_fail_rounds=3", lambda: _standard(max_fail_rounds=3), WEAKEN),
    ("CreateLane review_policy.max_fail_rounds=1", lambda: _standard(max_fail_rounds=1), WRITE),
    (
        "CreateLane review_policy.on_pass=SHIP",
        lambda: _standard(on_pass=P.ReviewPolicy.SHIP),
        WEAKEN,
    ),
    (
        "CreateLane review_policy.on_pass=NONE",
        lambda: _standard(on_pass=P.ReviewPolicy.NONE),
        WRITE,
    ),
    # the lane's retry policy
    ("CreateLane retry_policy.maximum_attempts=10", lambda: _custom(maximum_attempts=10), WEAKEN),
    ("CreateLane retry_policy.maximum_attempts=2", lambda: _custom(maximum_attempts=2), WRITE),
    (
        "CreateLane retry_policy.initial_interval=1s",
        lambda: _custom(initial_interval=_seconds(1)),
        WEAKEN,
    ),
    (
        "CreateLane retry_policy.initial_interval=60s",
        lambda: _custom(initial_interval=_seconds(60)),
        WRITE,
    ),
    (
        "CreateLane retry_policy.backoff_coefficient=1",
        lambda: _custom(backoff_coefficient=1),
        WEAKEN,
    ),
    (
        "CreateLane retry_policy.backoff_coefficient=4",
        lambda: _custom(backoff_coefficient=4),
        WRITE,
    ),
    (
        "CreateLane retry_policy.maximum_interval=10s",
        lambda: _custom(maximum_interval=_seconds(10)),
        WEAKEN,
    ),
    (
        "CreateLane retry_policy.maximum_interval=900s",
        lambda: _custom(maximum_interval=_seconds(900)),
        WRITE,
    ),
    # an item's own fields, on CreateLane and on CreateItem
    (
        "CreateLane items[0].retry_policy.maximum_attempts=10",
        lambda: _in_lane(retry_policy=P.RetryPolicy(maximum_attempts=10)),
        WEAKEN,
    ),
    (
        "CreateLane items[0].retry_policy.maximum_attempts=2",
        lambda: _in_lane(retry_policy=P.RetryPolicy(maximum_attempts=2)),
        WRITE,
    ),
    (
        "CreateItem item.retry_policy.maximum_attempts=10",
        lambda: _item(retry_policy=P.RetryPolicy(maximum_attempts=10)),
        WEAKEN,
    ),
    (
        "CreateItem item.retry_policy.initial_interval=1s",
        lambda: _item(retry_policy=P.RetryPolicy(initial_interval=_seconds(1))),
        WEAKEN,
    ),
    (
        "CreateItem item.retry_policy.maximum_attempts=2",
        lambda: _item(retry_policy=P.RetryPolicy(maximum_attempts=2)),
        WRITE,
    ),
    # Fields that only add a human step, or declare what the work needs (a class outside the
    # allowed list stops the item for a human): nothing weaker to set, whoever may write may.
    ("CreateItem item.requires_approval=true", lambda: _item(requires_approval=True), WRITE),
    ("CreateItem item.needs_human=true", lambda: _item(needs_human=True), WRITE),
    (
        "CreateItem item.action_classes=[repo_inspect]",
        lambda: _item(action_classes=["repo_inspect"]),
        WRITE,
    ),
    (
        "CreateItem item.action_classes=[prod_db_write] (stops for a human)",
        lambda: _item(action_classes=["prod_db_write"]),
        WRITE,
    ),
]


async def _strict_on_pass(world: World) -> None:
    """The child passes reviews on to INTEGRATE_THEN_SHIP (so plain SHIP is weaker there)."""
    await world.admin.coordinators.UpdateWorkCoordinator(
        W.UpdateWorkCoordinatorRequest(
            coordinator_id=world.child,
            work_coordinator=W.WorkCoordinator(
                scope=W.WorkCoordinator.ORG,
                review_policy=P.ReviewPolicy(on_pass=P.ReviewPolicy.INTEGRATE_THEN_SHIP),
            ),
            update_mask=field_mask_pb2.FieldMask(paths=["review_policy"]),
        )
    )


@pytest.fixture(scope="module")
async def policy_world(world: World) -> AsyncIterator[World]:
    await _strict_on_pass(world)
    yield world


def _request(world: World, name: str, shape: Shape) -> Message:
    made = shape()
    if name.startswith("CreateItem"):
        assert isinstance(made, L.Item)
        return L.CreateItemRequest(coordinator_id=world.child, lane_id=world.lane_id, item=made)
    assert isinstance(made, L.Lane)
    return L.CreateLaneRequest(coordinator_id=world.child, lane=made)


def _method(name: str) -> str:
    return f"LaneService/{name.split()[0]}"


def test_every_row_is_a_full_row() -> None:
    assert all(len(row) == len(COLUMNS) for _, _, row in ROWS)
    assert len({name for name, _, _ in ROWS}) == len(ROWS)


@pytest.mark.parametrize(("name", "shape", "expected"), ROWS, ids=[r[0] for r in ROWS])
async def test_policy_row(policy_world: World, name: str, shape: Shape, expected: str) -> None:
    method = _method(name)
    response_class = L.CreateItemResponse if "CreateItem" in method else L.CreateLaneResponse
    wrong: list[str] = []
    for column, letter in zip(COLUMNS, expected, strict=True):
        request = _request(policy_world, name, shape)
        client = policy_world.clients[column]
        got = authz_table.outcome(
            await authz_table.call(client, method, request, response_class, False)
        )
        if got != letter:
            wrong.append(
                f"{name} x {COLUMN_NAMES[column]} ({column}): expected {letter}, got {got}"
            )
    assert wrong == []


ROUTES = {rest_matrix._method_name(route): route for route in load_routes().routes}


@pytest.mark.parametrize(("name", "shape", "expected"), ROWS, ids=[r[0] for r in ROWS])
async def test_policy_row_over_rest(
    policy_world: World, rest: rest_matrix.RestWorld, name: str, shape: Shape, expected: str
) -> None:
    route = ROUTES[_method(name)]
    wrong: list[str] = []
    for column, letter in zip(COLUMNS, expected, strict=True):
        call = rest_matrix.to_http(route, _request(policy_world, name, shape))
        token = policy_world.tokens[column]
        response = await rest.http.request(
            call.method,
            call.path,
            params=call.query,
            json=call.body,
            headers={"authorization": f"Bearer {token}"} if token else {},
        )
        got, shown = rest_matrix.classify(response)
        if got != letter:
            wrong.append(
                f"{name} x {COLUMN_NAMES[column]} ({column}): expected {letter}, got {got}: {shown}"
            )
    assert wrong == []
