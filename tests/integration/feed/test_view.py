"""``GetView``: the redacted materialized view the feed's snapshot carries, page by page."""

from __future__ import annotations

import pytest

from tests.support.harness import Stack, task
from workcoord.api.v1 import work_coordinator_pb2

pytestmark = pytest.mark.usefixtures("backend")


async def view_page(stack: Stack, size: int, token: str = "") -> work_coordinator_pb2.View:
    response = await stack.admin.coordinators.GetView(
        work_coordinator_pb2.GetViewRequest(
            coordinator_id=stack.cid, page_size=size, page_token=token
        )
    )
    return response.view


async def test_lanes_page_in_order_and_every_page_is_a_whole_view(feed_stack: Stack) -> None:
    stack = feed_stack
    created = [(await stack.create_lane(task(f"v{n}"))).lane_id for n in range(5)]
    leases = await stack.lease()
    first = await view_page(stack, 2)
    assert first.next_page_token
    pages = [first]
    while pages[-1].next_page_token:
        pages.append(await view_page(stack, 2, pages[-1].next_page_token))
    assert [len(p.lanes) for p in pages] == [2, 2, 1]
    paged = [lane.lane_id for p in pages for lane in p.lanes]
    assert sorted(paged) == sorted(created)  # every lane once, none twice
    for page in pages:
        # Workers, capacity and the revision come with every page (each page is consistent
        # at its own revision; nothing changed here, so all pages share one).
        assert page.revision == first.revision
        assert {u.worker_class: u.in_use for u in page.capacity}["machine"] == 1
        assert [w.worker_id for w in page.workers] == ["machine-1"]
        assert leases[0].lease_token.encode() not in page.SerializeToString()
    whole = await view_page(stack, 500)
    assert [lane.lane_id for lane in whole.lanes] == paged  # pages keep the view's order
    assert not whole.next_page_token
