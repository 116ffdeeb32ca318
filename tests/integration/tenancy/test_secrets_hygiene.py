"""Secrets hygiene: plant credentials and private fields, drive the coordinator through them
(successes and failures), then scan logs, events, views, summaries, error messages and every
row of the database. Secrets must appear nowhere; private fields never outside their body."""

from __future__ import annotations

import json
import logging

import pytest
from google.protobuf import json_format
from sqlalchemy import select

from tests.integration.tenancy.world import (
    ALL_PERMISSIONS,
    create_global,
    grant,
    in_days,
    login,
    new_user,
    sessions,
    set_parent,
)
from tests.support.harness import Stack, all_events, identity, task
from workcoord.api.v1 import admin_pb2, lane_pb2, session_pb2, work_coordinator_pb2, worker_pb2
from workcoord.coordinator.storage import schema
from workcoord.kit.errors import WorkcoordError
from workcoord.kit.secrets import hash_secret

W = work_coordinator_pb2
PRIVATE_INPUT = "PRIVATE-INPUT-5d1e0c"
PRIVATE_CHECKPOINT = "PRIVATE-CHECKPOINT-88ab"
PRIVATE_TITLE = "PRIVATE-TITLE-c0ffee"


async def _failures(stack: Stack, calls: list[object]) -> list[WorkcoordError]:
    errors: list[WorkcoordError] = []
    for call in calls:
        with pytest.raises(WorkcoordError) as caught:
            await call  # type: ignore[misc]
        errors.append(caught.value)
    return errors


async def test_no_secret_leaves_through_logs_events_views_errors_or_storage(
    stack: Stack, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    # Everything of ours down to DEBUG; third-party drivers at INFO (at DEBUG, aiosqlite logs
    # every SQL parameter: an operator's choice, and it only ever sees hashes of secrets).
    caplog.set_level(logging.INFO)
    caplog.set_level(logging.DEBUG, logger="workcoord")
    parent = await create_global(stack)
    await set_parent(stack.admin, stack.cid, parent)
    await grant(stack.admin, stack.cid, parent, list(ALL_PERMISSIONS), in_days(stack, 1))
    user = await new_user(stack, role=admin_pb2.OrgMember.ORG_ADMIN)
    code = await sessions(stack.admin).CreateLoginCode(session_pb2.CreateLoginCodeRequest())
    issued = await sessions(stack.client(None)).ExchangeLoginCode(
        session_pb2.ExchangeLoginCodeRequest(code=code.code)
    )
    second = await login(stack)

    item = task("a", inputs={"token": PRIVATE_INPUT}, title=PRIVATE_TITLE)
    lane = await stack.create_lane(item, task("b"), inputs={"db": PRIVATE_INPUT})
    leases = await stack.lease(max_items=2)
    await stack.start(leases[0], identity(stack.clock))
    await stack.heartbeat(leases[0])
    await stack.checkpoint(
        leases[0], lane_pb2.Checkpoint(summary=PRIVATE_CHECKPOINT, next_action=PRIVATE_CHECKPOINT)
    )

    secrets = {
        "admin token": stack.admin_token,
        "service key": stack.service_key,
        "work key": stack.key_secret,
        "user token": user.secret,
        "lease token": leases[0].lease_token,
        "other lease token": leases[1].lease_token,
        "login code": code.code,
        "session": issued.session_secret,
        "csrf": issued.csrf_token,
        "second session": second.session_secret,
    }
    # Failures that carry secrets in: wrong bearer, wrong lease token, a secret as a field.
    wrong_bearer = stack.admin_token[:-4] + "ZZZZ"
    errors = await _failures(
        stack,
        [
            stack.client(wrong_bearer).admin.GetCurrentPrincipal(
                admin_pb2.GetCurrentPrincipalRequest()
            ),
            stack.heartbeat(leases[1], token=leases[0].lease_token),
            stack.heartbeat(leases[0]),  # checkpointed: its token is dead now
            sessions(stack.client(None)).ExchangeLoginCode(
                session_pb2.ExchangeLoginCodeRequest(code=code.code)
            ),
            stack.worker.workers.Start(
                worker_pb2.StartRequest(
                    coordinator_id=stack.cid,
                    lease_id=leases[1].lease_id,
                    lease_token=leases[1].lease_token,
                    run_identity=identity(stack.clock, account=stack.key_secret),
                )
            ),
        ],
    )
    secrets["wrong bearer"] = wrong_bearer

    events = await all_events(stack.admin, stack.cid)
    events_text = json.dumps([json_format.MessageToDict(e) for e in events])
    view = await stack.admin.coordinators.GetView(W.GetViewRequest(coordinator_id=stack.cid))
    view_text = json_format.MessageToJson(view)
    summary = await stack.admin.coordinators.GetChildSummary(
        W.GetChildSummaryRequest(coordinator_id=parent, child_id=stack.cid)
    )
    summary_text = json_format.MessageToJson(summary)
    keys = await stack.admin.admin.ListWorkKeys(admin_pb2.ListWorkKeysRequest())
    keys_text = json_format.MessageToJson(keys)
    errors_text = " ".join(
        f"{e.message} {e.metadata} {[v.description for v in e.field_violations]}" for e in errors
    )
    rows_text = await _dump_database(stack)
    out, err = capfd.readouterr()
    records = [*caplog.get_records("setup"), *caplog.get_records("call")]
    logs_text = "\n".join(r.getMessage() for r in records) + caplog.text + out + err
    # The probe sees what the coordinator's loggers would write.
    logging.getLogger("workcoord.coordinator.probe").debug("hygiene-probe")
    assert "hygiene-probe" in caplog.text

    places = {
        "logs": logs_text,
        "events": events_text,
        "view": view_text,
        "summary": summary_text,
        "work keys": keys_text,
        "errors": errors_text,
        "database": rows_text,
    }
    for name, secret in secrets.items():
        for place, text in places.items():
            assert secret not in text, f"the {name} leaked into {place}"
    # Each stored secret is there as its hash (the probe sees what it scans).
    for name in ("admin token", "work key", "user token", "session", "csrf", "login code"):
        assert hash_secret(secrets[name]) in rows_text, name
    # Private fields: never in logs, events or summaries (inputs live only in their body).
    for private in (PRIVATE_INPUT, PRIVATE_CHECKPOINT):
        for place in ("logs", "events", "summary", "errors"):
            assert private not in places[place], f"{private} leaked into {place}"
        assert private not in view_text
    assert PRIVATE_TITLE not in summary_text
    assert lane.lane_id in summary_text  # the summary did describe the lane


async def _dump_database(stack: Stack) -> str:
    engine = stack.running.store.engine
    parts: list[str] = []
    async with engine.connect() as conn:
        for table in schema.metadata.sorted_tables:
            rows = (await conn.execute(select(table))).fetchall()
            parts.extend(repr(tuple(row)) for row in rows)
    return "\n".join(parts)
