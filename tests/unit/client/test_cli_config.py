"""``workcoord config``: saved profiles (address, token file, output) in
``$XDG_CONFIG_HOME/workcoord/config.toml``; flags and environment variables still win."""

from __future__ import annotations

import json
import os
import stat
import tomllib
from pathlib import Path

import pytest

from workcoord.cli.main import main

from .fakes import GOOD_TOKEN, FakeCoordinator


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _config_file() -> Path:
    return Path(os.environ["XDG_CONFIG_HOME"]) / "workcoord" / "config.toml"


def test_set_get_list_use_delete(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(capsys, "config", "set", "prod", "--address", "wc.example:443")[0] == 0
    assert _run(capsys, "config", "set", "prod", "--output", "table")[0] == 0
    assert _run(capsys, "config", "set", "dev", "--address", "127.0.0.1:50051")[0] == 0
    path = _config_file()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert tomllib.loads(path.read_text(encoding="utf-8")) == {
        "current": "prod",  # the first profile saved
        "profiles": {
            "dev": {"address": "127.0.0.1:50051"},
            "prod": {"address": "wc.example:443", "output": "table"},
        },
    }
    code, out, _ = _run(capsys, "config", "get", "prod")
    assert code == 0 and json.loads(out) == {"address": "wc.example:443", "output": "table"}
    assert _run(capsys, "config", "get", "prod", "address")[1] == "wc.example:443\n"
    assert _run(capsys, "config", "list")[1] == "  dev\n* prod\n"
    assert _run(capsys, "config", "use", "dev")[0] == 0
    assert _run(capsys, "config", "list")[1] == "* dev\n  prod\n"
    assert _run(capsys, "config", "delete", "dev")[0] == 0
    assert _run(capsys, "config", "list")[1] == "  prod\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    "argv",
    [
        ["config", "set", "bad name", "--address", "x:1"],
        ["config", "set", "prod"],
        ["config", "get", "nope"],
        ["config", "use", "nope"],
        ["config", "delete", "nope"],
    ],
)
def test_bad_config_commands_are_usage_errors(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, _, err = _run(capsys, *argv)
    assert code == 2 and err.startswith("error: ")


def test_the_profile_connects_and_flags_and_env_win(
    coordinator: FakeCoordinator,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(GOOD_TOKEN + "\n", encoding="utf-8")
    assert (
        _run(capsys, "config", "set", "fake", "--address", coordinator.address)[0]
        + _run(capsys, "config", "set", "fake", "--token-file", str(token_file))[0]
        + _run(capsys, "config", "set", "fake", "--output", "table")[0]
        == 0
    )
    # The profile alone: its address, its token file, its output.
    code, out, err = _run(capsys, "admin", "orgs", "list")
    assert code == 0, err
    assert out.splitlines()[0].split() == ["SLUG", "DISPLAY", "NAME"]
    assert coordinator.recorded.last("ListOrgs")[1] == f"Bearer {GOOD_TOKEN}"
    # Flags win over it.
    code, out, _ = _run(capsys, "admin", "orgs", "list", "-o", "json", "--token", "wck_flag")
    assert code == 0 and json.loads(out)["orgs"][0]["slug"] == "acme"
    assert coordinator.recorded.last("ListOrgs")[1] == "Bearer wck_flag"
    # So do the environment variables.
    monkeypatch.setenv("WORKCOORD_TOKEN", "wck_env")
    monkeypatch.setenv("WORKCOORD_OUTPUT", "json")
    code, out, _ = _run(capsys, "admin", "orgs", "list")
    assert code == 0 and json.loads(out)["orgs"][0]["slug"] == "acme"
    assert coordinator.recorded.last("ListOrgs")[1] == "Bearer wck_env"
    monkeypatch.setenv("WORKCOORD_ADDRESS", "127.0.0.1:1")
    code, _, err = _run(capsys, "admin", "orgs", "list")
    assert code == 1, "WORKCOORD_ADDRESS must win over the profile's address"
    calls = len(coordinator.recorded.calls)
    code, _, err = _run(capsys, "admin", "orgs", "list", "--address", coordinator.address)
    assert code == 0, err
    assert len(coordinator.recorded.calls) == calls + 1


def test_profile_choice_flag_env_and_current(
    coordinator: FakeCoordinator,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _run(capsys, "config", "set", "dead", "--address", "127.0.0.1:1")[0] == 0
    assert _run(capsys, "config", "set", "live", "--address", coordinator.address)[0] == 0
    # current is "dead" (the first saved): --profile and WORKCOORD_PROFILE choose another.
    assert _run(capsys, "admin", "orgs", "list")[0] == 1
    assert _run(capsys, "--profile", "live", "admin", "orgs", "list")[0] == 0
    monkeypatch.setenv("WORKCOORD_PROFILE", "live")
    assert _run(capsys, "admin", "orgs", "list")[0] == 0
    assert _run(capsys, "--profile", "dead", "admin", "orgs", "list")[0] == 1
    code, _, err = _run(capsys, "--profile", "missing", "admin", "orgs", "list")
    assert code == 2 and "no profile 'missing'" in err


def test_a_missing_token_file_is_a_usage_error(
    coordinator: FakeCoordinator, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert _run(capsys, "config", "set", "p", "--address", coordinator.address)[0] == 0
    assert _run(capsys, "config", "set", "p", "--token-file", str(tmp_path / "gone"))[0] == 0
    code, _, err = _run(capsys, "admin", "orgs", "list")
    assert code == 2 and "token_file" in err


def test_a_malformed_config_file_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    path = _config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("current = [", encoding="utf-8")
    code, _, err = _run(capsys, "admin", "orgs", "list")
    assert code == 2 and "not TOML" in err
