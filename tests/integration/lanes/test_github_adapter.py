"""The GitHub Issues adapter against a local HTTP server speaking the same endpoints."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from workcoord.coordinator.domain.tickets import TrackerError
from workcoord.coordinator.trackers import GitHubIssues, trackers_from_settings
from workcoord.kit.settings import CoordinatorSettings, load

from .fake_github import FakeGitHub, running_fake_github

TOKEN = "ghp_fakeTokenForTests0123456789abcdefABCD"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with running_fake_github(TOKEN) as fake:
        fake.add_issue("octo/parser#12")
        fake.add_issue("octo/parser#13", state="closed")
        yield fake


async def test_reads_the_state_of_open_and_closed_issues(github: FakeGitHub) -> None:
    tracker = GitHubIssues(TOKEN, github.base_url)
    try:
        assert await tracker.get_state("octo/parser#12") == "OPEN"
        assert await tracker.get_state("octo/parser#13") == "CLOSED"
    finally:
        await tracker.aclose()
    calls = github.calls_to("GET")
    assert [c.path for c in calls] == [
        "/repos/octo/parser/issues/12",
        "/repos/octo/parser/issues/13",
    ]
    assert all(c.authorization == f"Bearer {TOKEN}" for c in calls)
    assert all(c.accept == "application/vnd.github+json" for c in calls)


async def test_close_patches_the_issue_and_is_idempotent(github: FakeGitHub) -> None:
    tracker = GitHubIssues(TOKEN, github.base_url)
    try:
        await tracker.close("octo/parser#12")
        assert github.state("octo/parser#12") == "closed"
        await tracker.close("octo/parser#12")  # closing a closed issue succeeds
        assert await tracker.get_state("octo/parser#12") == "CLOSED"
    finally:
        await tracker.aclose()
    patches = github.calls_to("PATCH")
    assert len(patches) == 2
    assert patches[0].path == "/repos/octo/parser/issues/12"
    assert patches[0].body == {"state": "closed", "state_reason": "completed"}


async def test_a_missing_issue_is_a_tracker_error(github: FakeGitHub) -> None:
    tracker = GitHubIssues(TOKEN, github.base_url)
    try:
        with pytest.raises(TrackerError, match="404"):
            await tracker.get_state("octo/parser#99")
        with pytest.raises(TrackerError, match="404"):
            await tracker.close("octo/other#12")
    finally:
        await tracker.aclose()


async def test_bad_credentials_never_leak_the_token_into_the_error() -> None:
    # A proxy in front of GitHub Enterprise that echoes the presented credential must not
    # make the token part of an error that is stored on pending actions and shown in digests.
    with running_fake_github(
        "ghp_theRightToken000000000000000000000", echo_credentials=True
    ) as fake:
        fake.add_issue("octo/parser#12")
        tracker = GitHubIssues(TOKEN, fake.base_url)
        try:
            for call in (tracker.get_state, tracker.close):
                with pytest.raises(TrackerError) as caught:
                    await call("octo/parser#12")
                assert "401" in str(caught.value)
                assert TOKEN not in str(caught.value)
                assert TOKEN not in repr(caught.value)
        finally:
            await tracker.aclose()
        assert fake.state("octo/parser#12") == "open"


@pytest.mark.parametrize("mode", [500, 502, "html", "array", "reset"])
async def test_server_errors_and_resets_are_tracker_errors(
    github: FakeGitHub, mode: int | str
) -> None:
    tracker = GitHubIssues(TOKEN, github.base_url)
    try:
        github.fail_next(1, mode)  # type: ignore[arg-type]
        with pytest.raises(TrackerError) as caught:
            await tracker.close("octo/parser#12")
        assert TOKEN not in str(caught.value)
        expected = {"reset": "unreachable", "html": "502", "array": "503"}.get(str(mode), str(mode))
        assert expected in str(caught.value)
        assert github.state("octo/parser#12") == "open"
        await tracker.close("octo/parser#12")  # the next request goes through
        assert github.state("octo/parser#12") == "closed"
    finally:
        await tracker.aclose()


@pytest.mark.parametrize(
    "key",
    [
        "",
        "octo/parser",
        "octo/parser#",
        "octo/parser#0",
        "octo/parser#-1",
        "octo#12",
        "../parser#12",
        "octo/../x#12",
        "octo/parser#12/../13",
        "octo/parser#12?state=closed",
        "octo/par ser#12",
        " octo/parser#12",
        "octo/parser#12345678901",
    ],
)
async def test_malformed_keys_are_refused_without_a_request(github: FakeGitHub, key: str) -> None:
    tracker = GitHubIssues(TOKEN, github.base_url)
    try:
        with pytest.raises(TrackerError, match="not a GitHub issue key"):
            await tracker.get_state(key)
        with pytest.raises(TrackerError, match="not a GitHub issue key"):
            await tracker.close(key)
    finally:
        await tracker.aclose()
    assert github.calls == []


@pytest.mark.parametrize("trailing", ["", "/"])
async def test_github_enterprise_base_url_with_a_path_prefix(trailing: str) -> None:
    with running_fake_github(TOKEN, prefix="/api/v3") as fake:
        fake.add_issue("corp/app#7")
        tracker = GitHubIssues(TOKEN, fake.base_url + trailing)
        try:
            assert fake.base_url.endswith("/api/v3")
            assert await tracker.get_state("corp/app#7") == "OPEN"
            await tracker.close("corp/app#7")
        finally:
            await tracker.aclose()
        assert [c.path for c in fake.calls] == [
            "/api/v3/repos/corp/app/issues/7",
            "/api/v3/repos/corp/app/issues/7",
        ]
        assert fake.state("corp/app#7") == "closed"


async def test_configuration_enables_github_with_its_token_and_base_url(
    github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKCOORD_GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("WORKCOORD_GITHUB_API_URL", github.base_url)
    settings = load(CoordinatorSettings)
    assert settings.github_token is not None
    assert TOKEN not in repr(settings)
    trackers = trackers_from_settings(
        settings.github_token.get_secret_value(), settings.github_api_url
    )
    tracker = trackers["github"]
    try:
        assert await tracker.get_state("octo/parser#12") == "OPEN"
    finally:
        await tracker.aclose()
    assert trackers_from_settings(None, settings.github_api_url) == {}
