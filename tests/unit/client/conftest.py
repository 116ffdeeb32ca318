"""Fixtures of the client and CLI tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from workcoord.cli import profiles

from .fakes import FakeCoordinator


@pytest.fixture
def coordinator() -> Iterator[FakeCoordinator]:
    fake = FakeCoordinator()
    yield fake
    fake.stop()


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No ambient workcoord configuration leaks into a test (nor the user's saved profiles)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg-config")))
    for name in (
        "WORKCOORD_ADDRESS",
        "WORKCOORD_TOKEN",
        "WORKCOORD_COORDINATOR_ID",
        "WORKCOORD_WORKER_ID",
        "WORKCOORD_LEASE_TOKEN",
        "WORKCOORD_AGENT_ID",
        "WORKCOORD_AGENT_ENGINE",
        "WORKCOORD_AGENT_ACCOUNT",
        "WORKCOORD_STATE_DIR",
        "WORKCOORD_BOOTSTRAP_ADMIN_TOKEN",
        "WORKCOORD_SERVICE_KEY",
        "DATABASE_URL",
        "REDIS_URL",
        "WORKCOORD_PROFILE",
        "WORKCOORD_OUTPUT",
    ):
        monkeypatch.delenv(name, raising=False)
    profiles.select(None)  # no profile saved: the flags' defaults are the plain ones
