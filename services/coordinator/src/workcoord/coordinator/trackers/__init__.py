"""Ticket tracker adapters behind the domain's ``TicketTracker`` interface."""

from __future__ import annotations

from workcoord.coordinator.domain.tickets import TicketTracker

from .github import GitHubIssues

__all__ = ["GitHubIssues", "TicketTracker", "trackers_from_settings"]


def trackers_from_settings(
    github_token: str | None, github_api_url: str
) -> dict[str, TicketTracker]:
    """The trackers this installation is configured for (GitHub when a token is set)."""
    trackers: dict[str, TicketTracker] = {}
    if github_token:
        trackers["github"] = GitHubIssues(github_token, github_api_url)
    return trackers
