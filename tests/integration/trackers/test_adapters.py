"""The GitLab and Jira adapters (and GitHub's rate limit) against local fakes of their APIs."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest

from tests.integration.lanes.fake_github import running_fake_github
from workcoord.coordinator.domain.tickets import TrackerError, TrackerRateLimited
from workcoord.coordinator.trackers import GitHubIssues, GitLabIssues, JiraIssues

from .fakes import FakeGitLab, FakeJira, running

GL_TOKEN = "glpat-orgAtokenForTests0123456789"
JIRA_CREDENTIAL = "ops@acme.test:ATATT3xFfGF0orgAjiraTokenForTests"
LOCAL = frozenset({"127.0.0.1"})


@pytest.fixture
def gitlab() -> Iterator[FakeGitLab]:
    with running(FakeGitLab(tokens={GL_TOKEN: {"acme/parser", "acme/deep/web"}})) as fake:
        fake.add_issue("acme/parser#1")
        fake.add_issue("acme/parser#2", "closed")
        fake.add_issue("acme/deep/web#7")
        yield fake


@pytest.fixture
def jira() -> Iterator[FakeJira]:
    with running(FakeJira(users={JIRA_CREDENTIAL: {"OPS"}})) as fake:
        fake.add_issue("OPS-1")
        fake.add_issue("OPS-2", "In Progress")
        fake.add_issue("OPS-3", "Done")
        fake.add_issue("OPS-4", "Shipped")
        fake.add_issue("OPS-5")
        fake.add_issue("SEC-1")
        yield fake


# ------------------------------------------------------------------------------- GitLab


async def test_gitlab_reads_and_closes_by_state_event(gitlab: FakeGitLab) -> None:
    tracker = GitLabIssues(GL_TOKEN, gitlab.base_url, allowed_hosts=LOCAL)
    try:
        assert await tracker.get_state("acme/parser#1") == "OPEN"
        assert await tracker.get_state("acme/parser#2") == "CLOSED"
        await tracker.close("acme/deep/web#7")
        await tracker.close("acme/deep/web#7")  # closing a closed issue succeeds
    finally:
        await tracker.aclose()
    assert gitlab.state("acme/deep/web#7") == "closed"
    puts = gitlab.calls_to("PUT")
    assert [c.path for c in puts] == ["/api/v4/projects/acme%2Fdeep%2Fweb/issues/7"] * 2
    assert puts[0].body == {"state_event": "close"}
    assert all(c.headers["private-token"] == GL_TOKEN for c in gitlab.calls)
    assert all("authorization" not in c.headers for c in gitlab.calls)


async def test_gitlab_states_follow_the_next_page_header(gitlab: FakeGitLab) -> None:
    gitlab.max_per_page = 2
    for iid in range(3, 8):
        gitlab.add_issue(f"acme/parser#{iid}", "closed" if iid % 2 else "opened")
    keys = [f"acme/parser#{iid}" for iid in range(1, 8)] + ["acme/parser#99"]
    tracker = GitLabIssues(GL_TOKEN, gitlab.base_url + "/api/v4/", allowed_hosts=LOCAL)
    try:
        states = await tracker.get_states(keys)
    finally:
        await tracker.aclose()
    assert states == {
        "acme/parser#1": "OPEN",
        "acme/parser#2": "CLOSED",
        "acme/parser#3": "CLOSED",
        "acme/parser#4": "OPEN",
        "acme/parser#5": "CLOSED",
        "acme/parser#6": "OPEN",
        "acme/parser#7": "CLOSED",
    }
    pages = [c.query["page"] for c in gitlab.calls_to("GET")]
    assert pages == [["1"], ["2"], ["3"], ["4"]]


async def test_gitlab_errors_are_its_messages_without_the_token(gitlab: FakeGitLab) -> None:
    wrong = GitLabIssues("glpat-wrong-token-000000000000", gitlab.base_url, allowed_hosts=LOCAL)
    right = GitLabIssues(GL_TOKEN, gitlab.base_url, allowed_hosts=LOCAL)
    try:
        with pytest.raises(TrackerError, match="GitLab answered 401: 401 Unauthorized") as caught:
            await wrong.close("acme/parser#1")
        assert "glpat-wrong" not in str(caught.value)
        with pytest.raises(TrackerError, match="404 Project Not Found"):
            await right.close("other/project#1")
        gitlab.rate_limit_next(1, 30)
        with pytest.raises(TrackerRateLimited) as limited:
            await right.close("acme/parser#1")
        assert limited.value.retry_after == 30
        assert gitlab.state("acme/parser#1") == "opened"
        for key in ("acme#1", "acme/parser", "acme/../x#1", "acme/parser#0", "/acme/p#1"):
            with pytest.raises(TrackerError, match="not a GitLab issue key"):
                await right.get_state(key)
    finally:
        await wrong.aclose()
        await right.aclose()


# --------------------------------------------------------------------------------- Jira


async def test_jira_transitions_to_the_done_status_by_name(jira: FakeJira) -> None:
    tracker = JiraIssues(JIRA_CREDENTIAL, jira.base_url, "done", allowed_hosts=LOCAL)
    try:
        assert await tracker.get_state("OPS-2") == "OPEN"
        assert await tracker.get_state("OPS-4") == "CLOSED"  # a status of the done category
        await tracker.close("OPS-2")
        assert jira.status("OPS-2") == "Done"
        await tracker.close("OPS-2")  # already done: nothing is posted
    finally:
        await tracker.aclose()
    posts = jira.calls_to("POST")
    assert len(posts) == 1
    assert posts[0].path == "/rest/api/3/issue/OPS-2/transitions"
    assert posts[0].body == {"transition": {"id": "13"}}
    basic = "Basic " + base64.b64encode(JIRA_CREDENTIAL.encode()).decode()
    assert all(c.headers["authorization"] == basic for c in jira.calls)


async def test_jira_uses_the_configured_done_status(jira: FakeJira) -> None:
    tracker = JiraIssues(JIRA_CREDENTIAL, jira.base_url, "Shipped", allowed_hosts=LOCAL)
    try:
        await tracker.close("OPS-1")
    finally:
        await tracker.aclose()
    assert jira.status("OPS-1") == "Shipped"


async def test_jira_without_a_transition_to_the_status_is_an_error(jira: FakeJira) -> None:
    tracker = JiraIssues(JIRA_CREDENTIAL, jira.base_url, "Released", allowed_hosts=LOCAL)
    try:
        with pytest.raises(TrackerError, match="no transition of OPS-1 to the status 'Released'"):
            await tracker.close("OPS-1")
    finally:
        await tracker.aclose()
    assert jira.status("OPS-1") == "To Do"


async def test_jira_states_page_through_the_search(jira: FakeJira) -> None:
    tracker = JiraIssues(JIRA_CREDENTIAL, jira.base_url, allowed_hosts=LOCAL)
    try:
        states = await tracker.get_states(["OPS-1", "OPS-2", "OPS-3", "OPS-4", "OPS-5"])
        assert states == {
            "OPS-1": "OPEN",
            "OPS-2": "OPEN",
            "OPS-3": "CLOSED",
            "OPS-4": "CLOSED",
            "OPS-5": "OPEN",
        }
        searches = [c.body for c in jira.calls_to("POST")]
        assert [s.get("nextPageToken") for s in searches] == [None, "2", "4"]
        assert searches[0]["fields"] == ["status"]
        # One key Jira does not know fails the whole search: the adapter reads one by one.
        before = len(jira.calls)
        states = await tracker.get_states(["OPS-1", "OPS-404"])
        assert states == {"OPS-1": "OPEN"}
        assert len(jira.calls) == before + 3
    finally:
        await tracker.aclose()


async def test_jira_errors_rate_limits_and_credentials(jira: FakeJira) -> None:
    secret = "ATATT3xFfGF0wrongTokenNeverShown"
    wrong = JiraIssues(f"ops@acme.test:{secret}", jira.base_url, allowed_hosts=LOCAL)
    right = JiraIssues(JIRA_CREDENTIAL, jira.base_url, allowed_hosts=LOCAL)
    try:
        with pytest.raises(TrackerError, match="Jira answered 401: Client must be") as caught:
            await wrong.close("OPS-1")
        assert secret not in str(caught.value)
        with pytest.raises(TrackerError, match="Issue does not exist"):
            await right.close("SEC-1")  # another project: this credential may not see it
        jira.rate_limit_next(1, 12)
        with pytest.raises(TrackerRateLimited) as limited:
            await right.get_state("OPS-1")
        assert limited.value.retry_after == 12
        for key in ("ops-1", "OPS", "OPS-0", "OPS-1/transitions", "../OPS-1"):
            with pytest.raises(TrackerError, match="not a Jira issue key"):
                await right.get_state(key)
    finally:
        await wrong.aclose()
        await right.aclose()
    with pytest.raises(TrackerError, match="email:api-token"):
        JiraIssues("just-a-token", jira.base_url)


# ------------------------------------------------------------------- GitHub, addresses


async def test_github_rate_limit_names_the_reset_time() -> None:
    with running_fake_github("ghp_rateLimitToken000000000000000000000") as fake:
        fake.add_issue("octo/parser#12")
        tracker = GitHubIssues("ghp_rateLimitToken000000000000000000000", fake.base_url)
        try:
            fake.fail_next(1, "rate_limit")
            with pytest.raises(TrackerRateLimited) as limited:
                await tracker.close("octo/parser#12")
            assert 50 <= limited.value.retry_after <= 61
            assert "API rate limit exceeded" in str(limited.value)
            await tracker.close("octo/parser#12")
        finally:
            await tracker.aclose()


async def test_a_connection_may_not_reach_loopback_unless_listed(gitlab: FakeGitLab) -> None:
    tracker = GitLabIssues(GL_TOKEN, gitlab.base_url, allowed_hosts=frozenset())
    try:
        with pytest.raises(TrackerError, match="address refused: must be an https URL"):
            await tracker.get_state("acme/parser#1")
    finally:
        await tracker.aclose()
    assert gitlab.calls == []


async def test_github_states_leave_out_what_it_refuses_unless_it_refuses_all() -> None:
    token = "ghp_statesToken0000000000000000000000000"
    with running_fake_github(token) as fake:
        fake.add_issue("octo/parser#1")
        fake.add_issue("octo/parser#2", state="closed")
        tracker = GitHubIssues(token, fake.base_url)
        wrong = GitHubIssues("ghp_wrongToken000000000000000000000000", fake.base_url)
        try:
            states = await tracker.get_states(["octo/parser#1", "octo/parser#2", "octo/parser#9"])
            assert states == {"octo/parser#1": "OPEN", "octo/parser#2": "CLOSED"}
            with pytest.raises(TrackerError, match="401"):
                await wrong.get_states(["octo/parser#1", "octo/parser#2"])
            fake.fail_next(1, "rate_limit")
            with pytest.raises(TrackerRateLimited):
                await tracker.get_states(["octo/parser#1", "octo/parser#2"])
        finally:
            await tracker.aclose()
            await wrong.aclose()
