"""A page token pages the list that issued it and no other: not another list (ListLanes' on
ListEvents), not the same list of another work coordinator or with other filters. Before, 70 of
108 pairs of lists accepted each other's tokens, since a token was only a signed sort key."""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from tests.support.harness import Stack, expect_error, task
from workcoord.api.v1 import admin_pb2, lane_pb2, work_coordinator_pb2, worker_pb2
from workcoord.kit.errors import InvalidArgument

ListCall = Callable[[str], Awaitable[Any]]


def _lists(stack: Stack, cid: str, lane_id: str) -> dict[str, ListCall]:
    """Every list call worth a token, on one work coordinator, by name, page size 1."""
    c = stack.admin
    wc = work_coordinator_pb2
    return {
        "ListLanes": lambda t: c.lanes.ListLanes(
            lane_pb2.ListLanesRequest(coordinator_id=cid, page_size=1, page_token=t)
        ),
        "ListLanes(ACTIVE)": lambda t: c.lanes.ListLanes(
            lane_pb2.ListLanesRequest(
                coordinator_id=cid, state=lane_pb2.Lane.ACTIVE, page_size=1, page_token=t
            )
        ),
        "GetView": lambda t: c.coordinators.GetView(
            wc.GetViewRequest(coordinator_id=cid, page_size=1, page_token=t)
        ),
        "ListEvents": lambda t: c.coordinators.ListEvents(
            wc.ListEventsRequest(coordinator_id=cid, page_size=1, page_token=t)
        ),
        "ListEvents(lane)": lambda t: c.coordinators.ListEvents(
            wc.ListEventsRequest(coordinator_id=cid, lane_id=lane_id, page_size=1, page_token=t)
        ),
        "ListWorkers": lambda t: c.workers.ListWorkers(
            worker_pb2.ListWorkersRequest(coordinator_id=cid, page_size=1, page_token=t)
        ),
    }


def _installation_lists(stack: Stack) -> dict[str, ListCall]:
    c = stack.admin
    return {
        "ListWorkCoordinators": lambda t: c.coordinators.ListWorkCoordinators(
            work_coordinator_pb2.ListWorkCoordinatorsRequest(
                org_slug=stack.org, page_size=1, page_token=t
            )
        ),
        "ListWorkKeys": lambda t: c.admin.ListWorkKeys(
            admin_pb2.ListWorkKeysRequest(org_slug=stack.org, page_size=1, page_token=t)
        ),
        "ListOrgs": lambda t: c.admin.ListOrgs(
            admin_pb2.ListOrgsRequest(page_size=1, page_token=t)
        ),
    }


def _next_token(response: Any) -> str:
    # GetView answers its token inside the view.
    view = getattr(response, "view", None)
    token: str = view.next_page_token if view is not None else response.next_page_token
    return token


async def _two_of_everything(stack: Stack, cid: str) -> str:
    """Two lanes (and so several events) and two workers on ``cid``; the first lane's id."""
    lanes = []
    for key in ("a", "b"):
        response = await stack.admin.lanes.CreateLane(
            lane_pb2.CreateLaneRequest(
                coordinator_id=cid,
                lane=lane_pb2.Lane(
                    title=key, template=lane_pb2.Lane.CUSTOM, items=[task(key), task(f"{key}2")]
                ),
            )
        )
        lanes.append(response.lane.lane_id)
    for worker_id in ("w1", "w2"):
        await stack.admin.workers.ReportWorker(
            worker_pb2.ReportWorkerRequest(
                coordinator_id=cid,
                worker=worker_pb2.Worker(worker_id=worker_id, worker_class="machine"),
            )
        )
    return lanes[0]


async def test_a_token_pages_only_the_list_that_issued_it(stack: Stack) -> None:
    a, b = stack.cid, await stack.new_coordinator()
    lane_a = await _two_of_everything(stack, a)
    lane_b = await _two_of_everything(stack, b)
    await stack.work_key()  # a second key, and a second org, so every list has two pages
    slug = f"other-{secrets.token_hex(4)}"
    await stack.admin.admin.CreateOrg(
        admin_pb2.CreateOrgRequest(org=admin_pb2.Org(slug=slug, display_name="Other"))
    )
    targets: dict[str, ListCall] = {
        f"{name} of A": call for name, call in _lists(stack, a, lane_a).items()
    }
    targets.update({f"{name} of B": call for name, call in _lists(stack, b, lane_b).items()})
    targets.update(_installation_lists(stack))
    origins = {name: call for name, call in targets.items() if not name.endswith(" of B")}

    tokens: dict[str, str] = {}
    for name, call in origins.items():
        tokens[name] = _next_token(await call(""))
        assert tokens[name], f"{name} has one page only"

    refused = 0
    for origin, token in tokens.items():
        for target, call in targets.items():
            if target == origin:
                second = await call(token)  # its own list reads it
                assert second is not None
                continue
            err = await expect_error(call(token), InvalidArgument, "INVALID_ARGUMENT")
            assert [v.field for v in err.field_violations] == ["page_token"], (origin, target)
            refused += 1
    assert refused == len(tokens) * (len(targets) - 1)
