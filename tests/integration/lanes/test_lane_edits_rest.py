"""``PATCH …/lanes/{laneId}`` over REST, as the page sends it: the mask in the query or implied
by the body, the etag, who may."""

from __future__ import annotations

import pytest

from tests.support.rest import custom, ok, task

from .system import LaneSystem

pytestmark = [pytest.mark.pg, pytest.mark.redis]


async def test_an_admin_raises_a_lane_s_priority_over_rest(system: LaneSystem) -> None:
    first = await system.create_lane(custom(task("calm", "machine")))
    lane = await system.create_lane(custom(task("urgent", "machine")))
    path = f"{system.base}/lanes/{lane['laneId']}"

    raised = ok(
        await system.admin.patch(
            path, params={"updateMask": "priority"}, json={"priority": 80, "etag": lane["etag"]}
        )
    )
    assert raised["priority"] == 80
    stale = await system.admin.patch(path, json={"priority": 90, "etag": lane["etag"]})
    assert stale.status_code == 409, stale.text
    assert "ETAG_MISMATCH" in stale.text
    # The mask implied by the body; priority 0 only with an explicit mask.
    retitled = ok(await system.admin.patch(path, json={"title": "now urgent"}))
    assert (retitled["title"], retitled["priority"]) == ("now urgent", 80)
    unknown = await system.admin.patch(path, json={"inputs": {"a": 1}})
    assert unknown.status_code == 400 and "update_mask" in unknown.text

    reader = await system.work_key(["READ"])
    refused = await reader.patch(path, json={"priority": 1})
    assert refused.status_code == 403, refused.text

    (leased,) = await system.lease("machine")
    assert leased["item"]["laneId"] == lane["laneId"]
    assert first["laneId"] != lane["laneId"]
