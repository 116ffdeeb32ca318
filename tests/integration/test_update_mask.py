"""Updates of a work coordinator: an update mask naming no updatable field is refused naming
``update_mask`` (it used to be ignored silently), and sending some classes' capacity changes
those classes only, over gRPC (``class_capacity.<class>`` paths) and REST (a PATCH's implied
mask names the classes sent), never dropping the others.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import httpx
from google.protobuf import field_mask_pb2

from tests.support.harness import Stack, expect_error, start_gateway_for, violated_fields
from workcoord.api.v1 import work_coordinator_pb2
from workcoord.kit.errors import InvalidArgument

WC = work_coordinator_pb2


async def _capacity(stack: Stack) -> dict[str, int]:
    got = await stack.admin.coordinators.GetWorkCoordinator(
        WC.GetWorkCoordinatorRequest(coordinator_id=stack.cid)
    )
    return dict(got.work_coordinator.class_capacity)


def _update(stack: Stack, paths: list[str] | None = None, **fields: Any) -> Awaitable[Any]:
    request = WC.UpdateWorkCoordinatorRequest(
        coordinator_id=stack.cid,
        work_coordinator=WC.WorkCoordinator(scope=WC.WorkCoordinator.ORG, **fields),
    )
    if paths is not None:
        request.update_mask.CopyFrom(field_mask_pb2.FieldMask(paths=paths))
    return stack.admin.coordinators.UpdateWorkCoordinator(request)


async def test_unknown_update_mask_paths_are_refused(stack: Stack) -> None:
    for paths in (
        ["bogus"],
        ["display_name", "revision"],
        ["retry_policy.nope"],
        ["digest_owner.x"],
    ):
        error = await expect_error(_update(stack, paths, display_name="x"), InvalidArgument)
        assert violated_fields(error) == {"update_mask"}, paths


async def test_sending_some_classes_keeps_the_others(stack: Stack) -> None:
    before = await _capacity(stack)
    assert len(before) > 1
    await _update(stack, ["class_capacity.machine"], class_capacity={"machine": 7})
    assert await _capacity(stack) == {**before, "machine": 7}
    # One class named in the mask and left out of the body: that class is removed.
    await _update(stack, ["class_capacity.person"], class_capacity={})
    expected = {k: v for k, v in before.items() if k != "person"} | {"machine": 7}
    assert await _capacity(stack) == expected
    # The whole map named in the mask replaces it, as asked.
    await _update(stack, ["class_capacity"], class_capacity={"machine": 1, "agent": 2})
    assert await _capacity(stack) == {"machine": 1, "agent": 2}


async def test_a_rest_patch_of_one_class_keeps_the_others(stack: Stack) -> None:
    before = await _capacity(stack)
    gateway = await start_gateway_for(stack.address)
    try:
        async with httpx.AsyncClient(base_url=f"http://{gateway.address}") as http:
            response = await http.patch(
                f"/v1/work-coordinators/{stack.cid}",
                headers={"Authorization": f"Bearer {stack.admin_token}"},
                json={"classCapacity": {"machine": 5}},
            )
        assert response.status_code == 200, response.text
    finally:
        await gateway.stop()
    assert await _capacity(stack) == {**before, "machine": 5}
