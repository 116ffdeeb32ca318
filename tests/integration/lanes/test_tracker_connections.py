"""Tracker connections end to end through REST: two orgs on one installation close their
tickets on GitHub, GitLab and Jira fakes with their own credentials; a wrong credential leaves
a pending action naming the connection, and rotating it lets the next pass succeed. No
credential ever shows in an answer, an event, the view, the digest, a log line or an error."""

from __future__ import annotations

import dataclasses
import logging
import secrets
from collections.abc import Iterator
from datetime import timedelta

import pytest

from tests.integration.trackers.fakes import FakeGitLab, FakeJira, running
from tests.support.rest import JSON, expect_status, ok, parse_time

from .system import DIGEST_OWNER, RECEIPT, LaneSystem, forbidden, standard_lane

pytestmark = [pytest.mark.pg, pytest.mark.redis]

# Each org's own credentials (the fakes accept each for that org's projects only).
GH = {
    "acme": "ghp_acmeOwnToken00000000000000000000000",
    "beta": "ghp_betaOwnToken0000000000000000000000",
}
GL = {"acme": "glpat-acmeOwnToken0000000000", "beta": "glpat-betaOwnToken0000000000"}
JIRA = {
    "acme": "bot@acme.test:ATATT3acmeOwnJiraToken",
    "beta": "bot@beta.test:ATATT3betaOwnJiraToken",
}
WRONG_GITLAB = "glpat-wrongTokenNeverAccepted00"
SECRETS = [*GH.values(), *GL.values(), *JIRA.values(), WRONG_GITLAB, "ATATT3acmeOwnJiraToken"]


@pytest.fixture
def gitlab() -> Iterator[FakeGitLab]:
    fake = FakeGitLab(tokens={GL["acme"]: {"acme/web"}, GL["beta"]: {"beta/web"}})
    with running(fake) as started:
        yield started


@pytest.fixture
def jira() -> Iterator[FakeJira]:
    with running(FakeJira(users={JIRA["acme"]: {"ACME"}, JIRA["beta"]: {"BETA"}})) as fake:
        yield fake


async def second_org(system: LaneSystem) -> LaneSystem:
    """Another org with its own work coordinator and work key, on the same installation."""
    org = f"beta-{secrets.token_hex(3)}"
    ok(await system.admin.post("/v1/orgs", json={"slug": org, "displayName": "Beta"}))
    created = ok(
        await system.admin.post(
            "/v1/work-coordinators",
            json={"scope": "ORG", "orgSlug": org, "digestOwner": DIGEST_OWNER},
        )
    )
    other = dataclasses.replace(system, org=org, cid=created["coordinatorId"])
    other.worker = await other.work_key()
    return other


async def connect(system: LaneSystem, **body: object) -> JSON:
    return ok(await system.admin.post(f"{system.base}/trackers", json=body))


async def connect_all(system: LaneSystem, org: str, gitlab: FakeGitLab, jira: FakeJira) -> None:
    await connect(
        system,
        tracker="github",
        baseUrl=system.github.base_url,
        credential=GH[org],
        projects=[f"{org}/app"],
    )
    await connect(
        system,
        tracker="gitlab",
        baseUrl=gitlab.base_url,
        credential=GL[org],
        projects=[f"{org}/web"],
    )
    await connect(
        system,
        tracker="jira",
        baseUrl=jira.base_url,
        credential=JIRA[org],
        projects=[org.upper()],
        doneStatus="Done",
    )


def tickets(org: str) -> list[JSON]:
    return [
        {"tracker": "github", "key": f"{org}/app#1"},
        {"tracker": "gitlab", "key": f"{org}/web#2"},
        {"tracker": "jira", "key": f"{org.upper()}-3"},
    ]


async def ship_lane(system: LaneSystem, ticket_list: list[JSON]) -> str:
    lane = await system.create_lane(standard_lane(tickets=ticket_list))
    await system.build_and_review(lane["laneId"], ["PASS"])
    await system.ship(lane["laneId"])
    await system.settle()
    return str(lane["laneId"])


def seed(system: LaneSystem, gitlab: FakeGitLab, jira: FakeJira, *orgs: str) -> None:
    system.github.other_tokens.update({GH[o]: {f"{o}/app"} for o in orgs})
    for org in orgs:
        system.github.add_issue(f"{org}/app#1")
        gitlab.add_issue(f"{org}/web#2")
        jira.add_issue(f"{org.upper()}-3", "In Progress")


async def test_two_orgs_close_their_tickets_with_their_own_credentials(
    system: LaneSystem, gitlab: FakeGitLab, jira: FakeJira, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    beta = await second_org(system)
    seed(system, gitlab, jira, "acme", "beta")
    await connect_all(system, "acme", gitlab, jira)
    await connect_all(beta, "beta", gitlab, jira)

    for org, world in (("acme", system), ("beta", beta)):
        lane_id = await ship_lane(world, tickets(org))
        lane = await world.lane(lane_id)
        assert lane["state"] == "LIVE"
        assert {t["key"]: t["state"] for t in lane["tickets"]} == {
            f"{org}/app#1": "CLOSED",
            f"{org}/web#2": "CLOSED",
            f"{org.upper()}-3": "CLOSED",
        }
        actions = await world.pending_actions()
        assert [a["state"] for a in actions] == ["SUCCEEDED"] * 3

    # Each org's closures went out with that org's own credential, on every tracker.
    for org in ("acme", "beta"):
        assert system.github.state(f"{org}/app#1") == "closed"
        assert gitlab.state(f"{org}/web#2") == "closed"
        assert jira.status(f"{org.upper()}-3") == "Done"
        (patch,) = [
            c for c in system.github.calls_to("PATCH") if c.path.startswith(f"/repos/{org}/")
        ]
        assert patch.authorization == f"Bearer {GH[org]}"
        (put,) = [
            c for c in gitlab.calls_to("PUT") if c.path.startswith(f"/api/v4/projects/{org}%2F")
        ]
        assert put.headers["private-token"] == GL[org]
        assert put.body == {"state_event": "close"}
        posts = [c for c in jira.calls_to("POST") if f"/{org.upper()}-3/" in c.path]
        assert len(posts) == 1
    # The installation-wide token was never used for a connection's project.
    assert all("ghp_laneScenario" not in c.authorization for c in system.github.calls_to("PATCH"))

    # Health: each connection shows its last success; the answer never holds a credential.
    listed = ok(await system.admin.get(f"{system.base}/trackers"))["trackerConnections"]
    assert sorted(c["tracker"] for c in listed) == ["github", "gitlab", "jira"]
    for connection in listed:
        assert connection["credentialSet"] is True
        assert connection["credentialFingerprint"].startswith("fp:")
        assert "credential" not in connection
        assert parse_time(connection["lastSuccessTime"]) == system.clock.now()
    other = ok(await beta.admin.get(f"{beta.base}/trackers"))["trackerConnections"]
    assert {c["credentialFingerprint"] for c in listed}.isdisjoint(
        {c["credentialFingerprint"] for c in other}
    )
    await assert_no_secret_anywhere(system, beta, caplog)


async def test_a_wrong_credential_names_the_connection_and_a_rotation_fixes_it(
    system: LaneSystem, gitlab: FakeGitLab, jira: FakeJira, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    seed(system, gitlab, jira, "acme")
    created = await connect(
        system,
        tracker="gitlab",
        baseUrl=gitlab.base_url,
        credential=WRONG_GITLAB,
        projects=["acme/web"],
    )
    tracker_id = created["trackerId"]
    lane_id = await ship_lane(system, [{"tracker": "gitlab", "key": "acme/web#2"}])
    (action,) = await system.pending_actions()
    assert action["state"] == "OPEN"
    assert tracker_id in action["lastError"]
    assert created["credentialFingerprint"] in action["lastError"]
    assert "GitLab answered 401: 401 Unauthorized" in action["lastError"]
    assert gitlab.state("acme/web#2") == "opened"

    # `why` on the lane shows the stuck closure with the connection's health.
    why = await system.why(laneId=lane_id)
    (stuck,) = why["stuckClosures"]
    assert stuck["pendingAction"]["actionId"] == action["actionId"]
    assert stuck["trackerConnection"]["trackerId"] == tracker_id
    assert "401" in stuck["trackerConnection"]["lastError"]
    assert "lastSuccessTime" not in stuck["trackerConnection"]

    # Rotate: the new credential (write-only) gets a new fingerprint and a clean health.
    rotated = ok(
        await system.admin.patch(
            f"{system.base}/trackers/{tracker_id}",
            json={"credential": GL["acme"]},
            params={"updateMask": "credential"},
        )
    )
    assert rotated["credentialFingerprint"] != created["credentialFingerprint"]
    assert "lastError" not in rotated and "credential" not in rotated
    system.clock.advance(timedelta(hours=2))
    await system.maintain()
    (action,) = await system.pending_actions()
    assert action["state"] == "SUCCEEDED"
    assert gitlab.state("acme/web#2") == "closed"
    assert (await system.why(laneId=lane_id)).get("stuckClosures", []) == []
    await assert_no_secret_anywhere(system, system, caplog)


async def test_who_may_manage_connections_and_what_is_refused(
    system: LaneSystem, gitlab: FakeGitLab
) -> None:
    base = f"{system.base}/trackers"
    body = {
        "tracker": "gitlab",
        "baseUrl": gitlab.base_url,
        "credential": GL["acme"],
        "projects": ["acme/web"],
    }
    # Work keys never manage connections, not even with every capability.
    forbidden(await system.worker.post(base, json=body))
    forbidden(await system.worker.get(base))
    # Bad input names the field.
    for change, field in (
        ({"tracker": "bitbucket"}, "tracker_connection.tracker"),
        ({"projects": []}, "tracker_connection.projects"),
        ({"projects": ["acme/../web"]}, "tracker_connection.projects[0]"),
        ({"baseUrl": "http://10.0.0.7"}, "tracker_connection.base_url"),
        ({"baseUrl": "https://169.254.169.254"}, "tracker_connection.base_url"),
        (
            {"tracker": "jira", "projects": ["ACME"], "credential": "no-email"},
            "tracker_connection.credential",
        ),
    ):
        error = expect_status(
            await system.admin.post(base, json={**body, **change}), 400, 3, "INVALID_ARGUMENT"
        )
        assert field in str(error), (change, error)
        assert GL["acme"] not in str(error)
    created = await connect(system, **body)
    # One project is served by one connection, so a ticket resolves to one.
    error = expect_status(await system.admin.post(base, json=body), 400, 3, "INVALID_ARGUMENT")
    assert created["trackerId"] in str(error)
    ok(await system.admin.delete(f"{base}/{created['trackerId']}"))
    assert ok(await system.admin.get(base)).get("trackerConnections", []) == []
    expect_status(await system.admin.delete(f"{base}/{created['trackerId']}"), 404, 5, "NOT_FOUND")


async def assert_no_secret_anywhere(
    system: LaneSystem, other: LaneSystem, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[str] = [caplog.text]
    for world in (system, other):
        seen.append(str(await world.events()))
        seen.append(str(await world.view()))
        seen.append(str(await world.digest()))
        seen.append(str(await world.pending_actions()))
        seen.append(str(ok(await world.admin.get(f"{world.base}/trackers"))))
    text = "\n".join(seen)
    assert "trackerConnection" in text  # the events name the connections' changes
    for secret in SECRETS:
        assert secret not in text
    assert RECEIPT["url"] in text  # the probe reads real content
