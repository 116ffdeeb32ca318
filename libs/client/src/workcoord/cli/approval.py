"""``workcoord item approve ITEM_ID --show``: the facts of a decision, without taking it.

What a person decides on, as the page's approval dialog shows it: the item and its lane, who
requested the approval and when (the item's last ``APPROVAL_REQUESTED`` event), the lane's
tickets, the inputs of the lane and the item (their bodies for those who may read them — org
and platform admins —, "hidden" for the others), and the evidence of every other item of the
lane that led there (build, review, fix, …): summary, verdict, findings, checks, links,
artifacts, and the run identity of its latest attempt (engine, agent, branch, worktree, host).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from google.protobuf import json_format

from workcoord.api.v1 import lane_pb2, work_coordinator_pb2
from workcoord.cli.common import CliError, client_from_args, run_and_report
from workcoord.client.client import WorkcoordClient

__all__ = ["approval_facts", "render_facts", "show_facts"]

JSON = dict[str, Any]
_EVENTS_PAGE = 500


async def _requests(client: WorkcoordClient, coordinator_id: str, item_id: str) -> list[JSON]:
    """The item's APPROVAL_REQUESTED events, oldest first."""
    found: list[JSON] = []
    token = ""
    while True:
        page = await client.coordinators.ListEvents(
            work_coordinator_pb2.ListEventsRequest(
                coordinator_id=coordinator_id,
                item_id=item_id,
                page_size=_EVENTS_PAGE,
                page_token=token,
            )
        )
        for event in page.events:
            if event.type == event.APPROVAL_REQUESTED:
                found.append(json_format.MessageToDict(event))
        token = page.next_page_token
        if not token or not page.events:
            return found


def _step(item: JSON) -> JSON:
    """What an item of the lane brought to the decision: its evidence and who ran it."""
    attempts = item.get("attempts", [])
    run: JSON = next((a["runIdentity"] for a in reversed(attempts) if a.get("runIdentity")), {})
    return {
        "itemId": item["itemId"],
        "key": item.get("key", ""),
        "kind": item.get("kind", ""),
        "state": item.get("state", ""),
        "attempts": item.get("attemptCount", 0),
        "evidence": item.get("evidence", {}),
        "run": {
            name: run[name]
            for name in ("engine", "agentId", "branch", "worktreePath", "hostname")
            if run.get(name)
        },
    }


def _inputs(document: JSON) -> JSON | str | None:
    """The inputs, "hidden" when the reader may not read them, None when there are none."""
    if document.get("inputsRedacted"):
        return "hidden"
    return document.get("inputs") or None


def approval_facts(lane: JSON, item_id: str, requests: list[JSON]) -> JSON:
    """The facts of the decision on ``item_id`` of ``lane`` (GetLane as proto3 JSON) with the
    item's APPROVAL_REQUESTED events ``requests``."""
    items = lane.get("items", [])
    item = next((i for i in items if i["itemId"] == item_id), None)
    if item is None:
        raise CliError(f"item {item_id} is not in lane {lane['laneId']}")
    last = requests[-1] if requests else {}
    return {
        "laneId": lane["laneId"],
        "laneTitle": lane.get("title", ""),
        "itemId": item_id,
        "item": f"{item.get('key', '')} ({item.get('kind', '')})",
        "state": item.get("state", ""),
        "requestedBy": last.get("actor", ""),
        "requestTime": last.get("time", ""),
        "tickets": lane.get("tickets", []),
        "laneInputs": _inputs(lane),
        "itemInputs": _inputs(item),
        "steps": [_step(other) for other in items if other["itemId"] != item_id],
    }


def _evidence_lines(evidence: JSON) -> list[str]:
    lines = []
    if evidence.get("verdict"):
        lines.append(f"verdict: {evidence['verdict']}")
    if evidence.get("summary"):
        lines.append(f"summary: {evidence['summary']}")
    for finding in evidence.get("findings", []):
        lines.append(f"finding: {finding}")
    if evidence.get("checks"):
        checks = ", ".join(f"{c.get('name', '')} {c.get('status', '')}" for c in evidence["checks"])
        lines.append(f"checks: {checks}")
    for link in evidence.get("links", []):
        lines.append(f"link: {link}")
    for artifact in evidence.get("artifacts", []):
        lines.append(f"artifact: {artifact.get('name', '')} {artifact.get('uri', '')}".rstrip())
    return lines


def _shown(value: JSON | str | None) -> str:
    if value is None:
        return "none"
    if isinstance(value, str):
        return f"{value} (your role may not read them)"
    return json.dumps(value, sort_keys=True)


def render_facts(facts: JSON) -> str:
    """The facts for people."""
    lines = [
        f"{facts['item']} of lane “{facts['laneTitle']}” ({facts['laneId']}): {facts['state']}",
        "requested by "
        + (f"{facts['requestedBy']} at {facts['requestTime']}" if facts["requestedBy"] else "—"),
    ]
    for ticket in facts["tickets"]:
        state = f" ({ticket['state']})" if ticket.get("state") else ""
        url = f" {ticket['url']}" if ticket.get("url") else ""
        lines.append(f"ticket: {ticket.get('key', '')}{state}{url}")
    lines.append(f"lane inputs: {_shown(facts['laneInputs'])}")
    lines.append(f"item inputs: {_shown(facts['itemInputs'])}")
    lines.append("evidence:" if facts["steps"] else "evidence: none (no other item in the lane)")
    for step in facts["steps"]:
        run = step["run"]
        who = " · ".join(
            part
            for part in (
                run.get("engine", ""),
                run.get("agentId", ""),
                f"branch {run['branch']}" if run.get("branch") else "",
                f"worktree {run['worktreePath']}" if run.get("worktreePath") else "",
            )
            if part
        )
        head = f"  {step['key']} ({step['kind']}) {step['state']} · attempts {step['attempts']}"
        lines.append(f"{head}{' · ' + who if who else ''}")
        lines.extend(f"    {line}" for line in _evidence_lines(step["evidence"]))
    return "\n".join(lines)


async def _facts(client: WorkcoordClient, args: argparse.Namespace, lane_id: str) -> JSON:
    answer = await client.lanes.GetLane(
        lane_pb2.GetLaneRequest(coordinator_id=args.coordinator_id, lane_id=lane_id)
    )
    lane = json_format.MessageToDict(answer.lane)
    requests = await _requests(client, args.coordinator_id, args.item_id)
    return approval_facts(lane, args.item_id, requests)


def show_facts(args: argparse.Namespace) -> int:
    """Print the facts of the decision on ``args.item_id`` (JSON or for people); decide
    nothing."""
    from workcoord.cli.items import lane_of

    async def go() -> None:
        async with client_from_args(args) as client:
            lane_id = args.lane_id or await lane_of(client, args.coordinator_id, args.item_id)
            facts = await _facts(client, args, lane_id)
        if getattr(args, "output", "json") == "table":
            print(render_facts(facts))
        else:
            json.dump(facts, sys.stdout, indent=2, ensure_ascii=False)
            print()

    return run_and_report(go, print_result=False)
