"""Human edits of a lane over gRPC (UpdateLane): priority and title, update mask and etag, who
may do what, the LANE_UPDATED event, and the next Lease honouring a new priority."""

from __future__ import annotations

from google.protobuf import field_mask_pb2, json_format

from tests.support.harness import Stack, expect_error, task, violated_fields
from workcoord.api.v1 import admin_pb2, event_pb2, lane_pb2
from workcoord.kit.errors import EtagMismatch, IllegalTransition, InvalidArgument, PermissionDenied

Capability = admin_pb2.WorkKey.Capability


def edit(
    stack: Stack, lane_id: str, paths: list[str], *, etag: str = "", **fields: object
) -> lane_pb2.UpdateLaneRequest:
    return lane_pb2.UpdateLaneRequest(
        coordinator_id=stack.cid,
        lane_id=lane_id,
        lane=lane_pb2.Lane(etag=etag, **fields),  # type: ignore[arg-type]
        update_mask=field_mask_pb2.FieldMask(paths=paths),
    )


async def test_a_write_key_raises_a_lane_s_priority_and_the_next_lease_honours_it(
    stack: Stack,
) -> None:
    await stack.create_lane(task("calm-1"), task("calm-2"), title="calm")
    urgent = await stack.create_lane(task("urgent-1"), task("urgent-2"), title="urgent")
    _, writer = await stack.work_key([Capability.READ, Capability.WRITE])

    answer = await writer.lanes.UpdateLane(
        edit(stack, urgent.lane_id, ["priority"], etag=urgent.etag, priority=50)
    )
    assert answer.lane.priority == 50
    assert answer.lane.etag != urgent.etag
    assert {i.key: i.priority for i in answer.lane.items} == {"urgent-1": 50, "urgent-2": 50}

    leased = await stack.lease("machine", max_items=2)
    assert [lease.item.key for lease in leased] == ["urgent-1", "urgent-2"]

    (updated,) = [e for e in await stack.events() if e.type == event_pb2.Event.LANE_UPDATED]
    assert updated.lane_id == urgent.lane_id
    assert updated.actor.startswith("key:"), updated.actor
    assert json_format.MessageToDict(updated.data) == {
        "fields": ["priority"],
        "priority": 50,
        "previousPriority": 0,
    }


async def test_an_item_with_a_priority_of_its_own_keeps_it(stack: Stack) -> None:
    lane = await stack.create_lane(task("own", priority=7), task("follows"), priority=3)
    answer = await stack.admin.lanes.UpdateLane(edit(stack, lane.lane_id, ["priority"], priority=9))
    assert {i.key: i.priority for i in answer.lane.items} == {"own": 7, "follows": 9}


async def test_the_title_changes_and_an_implied_mask_names_what_the_body_sets(
    stack: Stack,
) -> None:
    lane = await stack.create_lane(task("a"), title="old title")
    answer = await stack.admin.lanes.UpdateLane(edit(stack, lane.lane_id, [], title="new title"))
    assert (answer.lane.title, answer.lane.priority) == ("new title", 0)
    got = await stack.admin.lanes.GetLane(
        lane_pb2.GetLaneRequest(coordinator_id=stack.cid, lane_id=lane.lane_id)
    )
    assert got.lane.title == "new title"


async def test_a_stale_etag_is_aborted_and_changes_nothing(stack: Stack) -> None:
    lane = await stack.create_lane(task("a"))
    await stack.admin.lanes.UpdateLane(edit(stack, lane.lane_id, ["title"], title="first"))
    await expect_error(
        stack.admin.lanes.UpdateLane(
            edit(stack, lane.lane_id, ["priority"], etag=lane.etag, priority=9)
        ),
        EtagMismatch,
        "ETAG_MISMATCH",
    )
    got = await stack.admin.lanes.GetLane(
        lane_pb2.GetLaneRequest(coordinator_id=stack.cid, lane_id=lane.lane_id)
    )
    assert (got.lane.title, got.lane.priority) == ("first", 0)


async def test_leasing_does_not_move_the_etag(stack: Stack) -> None:
    lane = await stack.create_lane(task("a"), task("b"))
    await stack.lease("machine")
    answer = await stack.admin.lanes.UpdateLane(
        edit(stack, lane.lane_id, ["priority"], etag=lane.etag, priority=4)
    )
    assert answer.lane.priority == 4


async def test_bad_edits_name_the_field(stack: Stack) -> None:
    lane = await stack.create_lane(task("a"))
    update = stack.admin.lanes.UpdateLane
    for paths, fields, field in (
        (["inputs"], {}, "update_mask"),
        (["template"], {}, "update_mask"),
        (["title"], {"title": ""}, "lane.title"),
        (["priority"], {"priority": 101}, "lane.priority"),
        (["priority"], {"priority": -1}, "lane.priority"),
    ):
        err = await expect_error(
            update(edit(stack, lane.lane_id, paths, **fields)), InvalidArgument
        )
        assert field in violated_fields(err), (paths, err)
    # Nothing to change: the body sets nothing and the mask names nothing.
    err = await expect_error(update(edit(stack, lane.lane_id, [])), InvalidArgument)
    assert violated_fields(err) == {"update_mask"}


async def test_who_may_edit_a_lane(stack: Stack) -> None:
    lane = await stack.create_lane(task("a"))
    _, reader = await stack.work_key([Capability.READ])
    _, leaser = await stack.work_key([Capability.READ, Capability.LEASE])
    for client in (reader, leaser):
        await expect_error(
            client.lanes.UpdateLane(edit(stack, lane.lane_id, ["priority"], priority=5)),
            PermissionDenied,
        )


async def test_a_finished_lane_keeps_its_priority_but_may_be_retitled(stack: Stack) -> None:
    lane = await stack.create_lane(task("a"))
    await stack.admin.lanes.CancelLane(
        lane_pb2.CancelLaneRequest(coordinator_id=stack.cid, lane_id=lane.lane_id)
    )
    await expect_error(
        stack.admin.lanes.UpdateLane(edit(stack, lane.lane_id, ["priority"], priority=5)),
        IllegalTransition,
    )
    answer = await stack.admin.lanes.UpdateLane(edit(stack, lane.lane_id, ["title"], title="x"))
    assert answer.lane.title == "x"
