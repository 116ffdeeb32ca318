"""Ticket tracker adapters behind the domain's ``TicketTracker`` interface: GitHub Issues,
GitLab issues and Jira. A work coordinator's tracker connection names one of them; the
installation-wide GitHub token (``WORKCOORD_GITHUB_TOKEN``) is the fallback."""

from __future__ import annotations

from collections.abc import Callable, Collection

from workcoord.coordinator.domain.tickets import (
    TicketTracker,
    TrackerConnection,
    TrackerError,
    TrackerKind,
)

from .github import GitHubIssues
from .gitlab import GitLabIssues
from .jira import JiraIssues

__all__ = [
    "GitHubIssues",
    "GitLabIssues",
    "JiraIssues",
    "TicketTracker",
    "adapter_factory",
    "trackers_from_settings",
]


def trackers_from_settings(
    github_token: str | None, github_api_url: str
) -> dict[str, TicketTracker]:
    """The installation-wide trackers (GitHub when a token is set)."""
    trackers: dict[str, TicketTracker] = {}
    if github_token:
        trackers["github"] = GitHubIssues(github_token, github_api_url)
    return trackers


def adapter_factory(
    allowed_hosts: Collection[str],
) -> Callable[[TrackerConnection, str], TicketTracker]:
    """Builds a connection's adapter from it and its opened credential; every call checks the
    connection's address again (``allowed_hosts`` may be loopback or private)."""
    hosts = frozenset(h.lower() for h in allowed_hosts)

    def build(connection: TrackerConnection, credential: str) -> TicketTracker:
        if connection.tracker == TrackerKind.GITHUB:
            return GitHubIssues(credential, connection.base_url, allowed_hosts=hosts)
        if connection.tracker == TrackerKind.GITLAB:
            return GitLabIssues(credential, connection.base_url, allowed_hosts=hosts)
        if connection.tracker == TrackerKind.JIRA:
            return JiraIssues(
                credential, connection.base_url, connection.done_status, allowed_hosts=hosts
            )
        raise TrackerError(f"no adapter for the tracker {connection.tracker}")

    return build
