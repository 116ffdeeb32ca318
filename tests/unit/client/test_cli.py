"""The ``workcoord`` command: parsing, output, errors, the dev state folder, serve/db wiring."""

from __future__ import annotations

import asyncio
import io
import json
import shutil
import stat
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from workcoord.api.v1 import admin_pb2, lane_pb2, work_coordinator_pb2, worker_pb2
from workcoord.cli import dev
from workcoord.cli.completion import command_tree, render
from workcoord.cli.main import build_parser, main

from .fakes import GOOD_TOKEN, STALE_LEASE, FakeCoordinator


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --- client commands against the fake coordinator -------------------------------------------


def test_admin_orgs_list_prints_proto_json_with_the_token(
    coordinator: FakeCoordinator,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WORKCOORD_TOKEN", GOOD_TOKEN)
    code, out, _ = _run(capsys, "admin", "orgs", "list", "--address", coordinator.address)
    assert code == 0
    assert json.loads(out) == {"orgs": [{"slug": "acme", "displayName": "Acme"}]}
    assert coordinator.recorded.last("ListOrgs")[1] == f"Bearer {GOOD_TOKEN}"


def test_server_errors_print_reason_and_fields_and_exit_1(
    coordinator: FakeCoordinator, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(
        capsys, "admin", "orgs", "create", "--slug", "ACME", "--address", coordinator.address
    )
    assert code == 1
    assert out == ""
    assert "error: INVALID_ARGUMENT:" in err
    assert "  org.slug: must be lowercase" in err


def test_admin_keys_and_settings(
    coordinator: FakeCoordinator, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(
        capsys,
        "admin", "keys", "create", "--display-name", "fleet-1", "--org", "acme",
        "--coordinator", "c1", "--coordinator", "c2",
        "--capability", "READ", "--capability", "LEASE",
        "--expire-time", "2027-01-01T00:00:00Z",
        "--address", coordinator.address, "--token", GOOD_TOKEN,
    )  # fmt: skip
    assert code == 0 and json.loads(out)["secret"] == "wck_secret"
    request, _ = coordinator.recorded.last("CreateWorkKey")
    assert isinstance(request, admin_pb2.CreateWorkKeyRequest)
    assert list(request.work_key.coordinator_ids) == ["c1", "c2"]
    assert list(request.work_key.capabilities) == [admin_pb2.WorkKey.READ, admin_pb2.WorkKey.LEASE]
    assert request.work_key.expire_time.ToJsonString() == "2027-01-01T00:00:00Z"

    code, out, _ = _run(
        capsys, "admin", "settings", "set", "--enabled", "false", "--address", coordinator.address
    )
    assert code == 0 and json.loads(out)["settings"]["workCoordinatorEnabled"] is False
    update, _ = coordinator.recorded.last("UpdateSettings")
    assert isinstance(update, admin_pb2.UpdateSettingsRequest)
    assert list(update.update_mask.paths) == ["work_coordinator_enabled"]

    code, _, _ = _run(capsys, "admin", "keys", "revoke", "k9", "--address", coordinator.address)
    assert code == 0


def test_lane_create_from_a_json_file(
    coordinator: FakeCoordinator, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    lane_file = tmp_path / "lane.json"
    lane_file.write_text(
        json.dumps(
            {
                "title": "Fix flaky parser",
                "template": "CUSTOM",
                "items": [{"key": "a", "kind": "TASK", "workerClass": "machine"}],
            }
        )
    )
    code, out, _ = _run(
        capsys, "lane", "create", "--coordinator", "c1", "--file", str(lane_file),
        "--request-id", "r1", "--address", coordinator.address,
    )  # fmt: skip
    assert code == 0
    assert json.loads(out)["lane"]["laneId"] == "lane-1"
    request, _ = coordinator.recorded.last("CreateLane")
    assert isinstance(request, lane_pb2.CreateLaneRequest)
    assert (request.coordinator_id, request.request_id) == ("c1", "r1")
    assert request.lane.items[0].worker_class == "machine"


def test_lane_file_with_unknown_field_is_refused_before_any_call(
    coordinator: FakeCoordinator, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    lane_file = tmp_path / "lane.json"
    lane_file.write_text('{"title": "x", "nonsense": 1}')
    code, _, err = _run(
        capsys, "lane", "create", "--coordinator", "c1", "--file", str(lane_file),
        "--address", coordinator.address,
    )  # fmt: skip
    assert code == 1
    assert "nonsense" in err
    assert not coordinator.recorded.calls


def test_events_and_why(
    coordinator: FakeCoordinator,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WORKCOORD_COORDINATOR_ID", "c1")
    monkeypatch.setenv("WORKCOORD_ADDRESS", coordinator.address)
    code, out, _ = _run(capsys, "events", "--since", "41")
    assert code == 0 and json.loads(out)["revision"] == "42"
    request, _ = coordinator.recorded.last("ListEvents")
    assert isinstance(request, work_coordinator_pb2.ListEventsRequest)
    assert (request.coordinator_id, request.since_revision) == ("c1", 41)

    assert _run(capsys, "why", "--item", "i1")[0] == 0
    explain, _ = coordinator.recorded.last("Explain")
    assert isinstance(explain, work_coordinator_pb2.ExplainRequest)
    assert (explain.item_id, explain.lane_id) == ("i1", "")


def test_scripted_worker_commands(
    coordinator: FakeCoordinator,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in {
        "WORKCOORD_ADDRESS": coordinator.address,
        "WORKCOORD_COORDINATOR_ID": "c1",
        "WORKCOORD_WORKER_ID": "w1",
        "WORKCOORD_AGENT_ID": "agent-7",
        "WORKCOORD_AGENT_ENGINE": "codex",
        "WORKCOORD_AGENT_ACCOUNT": "fleet-bot",
    }.items():
        monkeypatch.setenv(name, value)

    code, out, _ = _run(capsys, "worker", "lease", "--class", "machine", "--max-items", "3")
    assert code == 0
    assert json.loads(out)["leases"][0]["leaseToken"] == "wcl_token"
    sent, _ = coordinator.recorded.last("Lease")
    assert isinstance(sent, worker_pb2.LeaseRequest) and sent.request_id  # always one
    _run(capsys, "worker", "lease", "--class", "machine", "--request-id", "retry-1")
    again, _ = coordinator.recorded.last("Lease")
    assert isinstance(again, worker_pb2.LeaseRequest) and again.request_id == "retry-1"
    _run(capsys, "worker", "lease", "--class", "machine,agent")
    both, _ = coordinator.recorded.last("Lease")
    assert isinstance(both, worker_pb2.LeaseRequest)
    assert (both.worker_class, list(both.worker_classes)) == ("machine", ["agent"])

    code, _, err = _run(capsys, "worker", "heartbeat", "lease-1")
    assert code == 2 and "WORKCOORD_LEASE_TOKEN" in err

    monkeypatch.setenv("WORKCOORD_LEASE_TOKEN", "wcl_token")
    assert _run(capsys, "worker", "start", "lease-1", "--branch", "fix/x", "--pid", "4242")[0] == 0
    start, _ = coordinator.recorded.last("Start")
    assert isinstance(start, worker_pb2.StartRequest)
    assert (start.lease_token, start.run_identity.pid) == ("wcl_token", 4242)
    assert start.run_identity.agent_id == "agent-7"

    assert _run(capsys, "worker", "heartbeat", "lease-1", "--progress", "1/2")[0] == 0
    assert _run(capsys, "worker", "complete", "lease-1", "--verdict", "PASS")[0] == 0
    complete, _ = coordinator.recorded.last("Complete")
    assert isinstance(complete, worker_pb2.CompleteRequest)
    assert complete.evidence.verdict == lane_pb2.Evidence.PASS
    assert _run(capsys, "worker", "fail", "lease-1", "--message", "x", "--no-retry")[0] == 0
    fail, _ = coordinator.recorded.last("Fail")
    assert isinstance(fail, worker_pb2.FailRequest) and fail.error.retryable is False
    assert _run(capsys, "worker", "checkpoint", "lease-1", "--summary", "half")[0] == 0
    assert _run(capsys, "worker", "release", "lease-1", "--reason", "bye")[0] == 0

    code, _, err = _run(capsys, "worker", "heartbeat", STALE_LEASE)
    assert code == 1
    assert "error: LEASE_LOST: lease lost: expired" in err
    assert "(cause: expired)" in err


def test_mcp_without_a_credential_is_a_usage_error_and_writes_nothing_to_stdout(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("WORKCOORD_TOKEN", raising=False)
    code, out, err = _run(capsys, "mcp", "--address", "127.0.0.1:9")
    assert (code, out) == (2, "")
    assert "WORKCOORD_TOKEN" in err


def test_missing_coordinator_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["view"])
    assert caught.value.code == 2
    assert "--coordinator" in capsys.readouterr().err


# --- serve and db ---------------------------------------------------------------------------


def test_serve_without_configuration_exits_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = _run(capsys, "serve", "coordinator")
    assert code == 2 and "DATABASE_URL: is required" in err
    code, _, err = _run(capsys, "serve", "recovery")
    assert code == 2 and "WORKCOORD_SERVICE_KEY: is required" in err
    monkeypatch.setenv("WORKCOORD_RECOVERY_INTERVAL_SECONDS", "soon")
    monkeypatch.setenv("WORKCOORD_SERVICE_KEY", "wcsvc_x")
    code, _, err = _run(capsys, "serve", "recovery")
    assert code == 2 and "WORKCOORD_RECOVERY_INTERVAL_SECONDS" in err


def _fake_migrate(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    module = types.ModuleType("workcoord.coordinator.storage.migrate")
    revision: dict[str, str | None] = {"now": None}

    def upgrade(url: str) -> None:
        calls.append(f"upgrade {url}")
        revision["now"] = "0001"

    def current(url: str) -> str | None:
        calls.append(f"current {url}")
        return revision["now"]

    module.upgrade = upgrade  # type: ignore[attr-defined]
    module.current = current  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "workcoord.coordinator.storage.migrate", module)
    return calls


def test_db_commands(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _fake_migrate(monkeypatch)
    code, _, err = _run(capsys, "db", "current")
    assert code == 2 and "DATABASE_URL" in err

    monkeypatch.setenv("DATABASE_URL", "sqlite+aiosqlite:////tmp/x.db")
    assert _run(capsys, "db", "current") == (0, "none\n", "")
    assert _run(capsys, "db", "upgrade", "--database-url", "sqlite+aiosqlite:////tmp/y.db") == (
        0,
        "database at revision 0001\n",
        "",
    )
    assert calls == [
        "current sqlite+aiosqlite:////tmp/x.db",
        "upgrade sqlite+aiosqlite:////tmp/y.db",
        "current sqlite+aiosqlite:////tmp/y.db",
    ]


# --- dev: state folder, token, orchestration ------------------------------------------------


def test_state_dir_resolution(tmp_path: Path) -> None:
    assert dev.resolve_state_dir(None, {}, cwd=tmp_path) == tmp_path / ".workcoord"
    assert dev.resolve_state_dir(None, {"WORKCOORD_STATE_DIR": "s"}, cwd=tmp_path) == tmp_path / "s"
    assert dev.resolve_state_dir("/abs", {"WORKCOORD_STATE_DIR": "s"}, cwd=tmp_path) == Path("/abs")


def test_state_folder_is_private_and_the_token_persists(tmp_path: Path) -> None:
    options = dev.DevOptions(state_dir=str(tmp_path / "state"))
    first = dev.prepare_state(options, env={})
    assert stat.S_IMODE(first.state_dir.stat().st_mode) == 0o700
    token_file = first.state_dir / dev.ADMIN_TOKEN_FILE
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert first.admin_token.startswith("wcadm_") and first.admin_token_source == "generated"
    assert first.database_url == f"sqlite+aiosqlite:///{first.state_dir / 'workcoord.db'}"
    assert Path(first.database_url.removeprefix("sqlite+aiosqlite:///")).is_absolute()

    # A restart keeps the token (and tightens loosened permissions).
    first.state_dir.chmod(0o755)
    token_file.chmod(0o644)
    second = dev.prepare_state(options, env={})
    assert (second.admin_token, second.admin_token_source) == (first.admin_token, "state folder")
    assert stat.S_IMODE(second.state_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600

    # The environment wins and is not written down.
    third = dev.prepare_state(options, env={"WORKCOORD_BOOTSTRAP_ADMIN_TOKEN": "wcadm_mine"})
    assert (third.admin_token, third.admin_token_source) == ("wcadm_mine", "environment")
    assert token_file.read_text().strip() == first.admin_token


def test_the_dev_service_key_persists_across_restarts(tmp_path: Path) -> None:
    """Before, every dev run drew a fresh service key, and with it a fresh lease-token key: a
    Lease retried with its request id after a restart answered [] instead of its leases."""
    state = dev.prepare_state(dev.DevOptions(state_dir=str(tmp_path / "state")), env={})
    first = dev.load_or_create_service_key(state.state_dir)
    key_file = state.state_dir / dev.SERVICE_KEY_FILE
    assert first.startswith("wcsvc_")
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key_file.chmod(0o644)
    assert dev.load_or_create_service_key(state.state_dir) == first
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600


def test_dev_settings_are_embedded_and_loopback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REDIS_URL", "redis://elsewhere:6379")  # must not leak into dev
    state = dev.prepare_state(dev.DevOptions(state_dir=str(tmp_path)), env={})
    coordinator = dev.coordinator_settings(state, 50051, "wcsvc_k")
    assert coordinator.redis_url is None
    assert coordinator.database_url == state.database_url
    assert coordinator.listen_coordinator == "127.0.0.1:50051"
    assert coordinator.bootstrap_admin_token is not None
    assert coordinator.bootstrap_admin_token.get_secret_value() == state.admin_token
    recovery = dev.recovery_settings("127.0.0.1:50051", 50052, "wcsvc_k", 2.5)
    assert recovery.recovery_interval_seconds == 2.5
    assert recovery.service_key is not None and recovery.service_key.get_secret_value() == "wcsvc_k"
    gateway = dev.gateway_settings("127.0.0.1:1", "127.0.0.1:2", 8080)
    assert (gateway.coordinator_address, gateway.recovery_address) == ("127.0.0.1:1", "127.0.0.1:2")


def test_dev_flags(tmp_path: Path) -> None:
    args = build_parser().parse_args(
        ["dev", "--coordinator-port", "0", "--recovery-interval", "0.5", "--print-config-json"]
    )
    assert (args.coordinator_port, args.recovery_port, args.gateway_port) == (0, 50052, 8080)
    assert args.recovery_interval == 0.5 and args.print_config_json
    with pytest.raises(SystemExit):
        build_parser().parse_args(["dev", "--recovery-interval", "0"])


class _FakeService:
    def __init__(self, name: str, address: str, log: list[str], settings: Any) -> None:
        self.name, self.address, self.log, self.settings = name, address, log, settings
        log.append(f"start {name}")

    async def stop(self) -> None:
        self.log.append(f"stop {self.name}")


async def test_serve_dev_starts_in_order_announces_and_stops_in_reverse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log: list[str] = []
    seen: dict[str, Any] = {}

    def fake_module(module: str, function: str, name: str, address: str) -> None:
        async def start(settings: Any) -> _FakeService:
            seen[name] = settings
            return _FakeService(name, address, log, settings)

        mod = types.ModuleType(module)
        setattr(mod, function, start)
        monkeypatch.setitem(sys.modules, module, mod)

    fake_module(
        "workcoord.coordinator.server", "start_coordinator", "coordinator", "127.0.0.1:7001"
    )
    fake_module("workcoord.recovery.server", "start_recovery", "recovery", "127.0.0.1:7002")
    fake_module("workcoord.gateway.server", "start_gateway", "gateway", "127.0.0.1:7003")

    state = dev.prepare_state(dev.DevOptions(state_dir=str(tmp_path)), env={})
    options = dev.DevOptions(print_config_json=True, recovery_interval_seconds=3)
    out = io.StringIO()
    stop = asyncio.Event()
    task = asyncio.create_task(dev.serve_dev(options, state, out=out, stop=stop))
    for _ in range(200):
        if dev.READY_LINE in out.getvalue():
            break
        await asyncio.sleep(0.01)
    lines = out.getvalue().splitlines()
    assert lines[-1] == dev.READY_LINE
    config = json.loads(lines[-2])
    assert config["gateway_url"] == "http://127.0.0.1:7003"
    assert config["openapi_url"] == "http://127.0.0.1:7003/v1/openapi.json"
    assert config["mcp_url"] == "http://127.0.0.1:7003/mcp"
    assert config["coordinator_address"] == "127.0.0.1:7001"
    assert config["recovery_address"] == "127.0.0.1:7002"
    assert config["admin_token"] == state.admin_token
    assert config["state_dir"] == str(state.state_dir)

    # Each service is pointed at the bound addresses of those started before it.
    assert seen["recovery"].coordinator_address == "127.0.0.1:7001"
    assert seen["recovery"].recovery_interval_seconds == 3
    assert (
        seen["recovery"].service_key.get_secret_value()
        == seen["coordinator"].service_key.get_secret_value()
    )
    assert seen["gateway"].recovery_address == "127.0.0.1:7002"

    stop.set()
    await asyncio.wait_for(task, timeout=60)
    assert log == [
        "start coordinator",
        "start recovery",
        "start gateway",
        "stop gateway",
        "stop recovery",
        "stop coordinator",
    ]


# --- completion -----------------------------------------------------------------------------


def test_completion_tree_covers_the_commands() -> None:
    tree = command_tree(build_parser())
    assert {"dev", "serve", "db", "admin", "lane", "worker", "completion"} <= set(tree[""])
    assert set(tree["admin keys"]) >= {"create", "list", "revoke"}
    assert "--coordinator" in tree["lane create"]


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_completion_scripts_parse(shell: str) -> None:
    script = render(shell, build_parser())
    executable = shutil.which(shell)
    if executable is None:
        pytest.skip(f"{shell} is not installed")
    subprocess.run([executable, "-n"], input=script, text=True, check=True)


def test_bash_completion_completes_subcommands() -> None:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    script = render("bash", build_parser())
    probe = (
        script
        + '\nCOMP_WORDS=(workcoord admin ke); COMP_CWORD=2; _workcoord; echo "${COMPREPLY[@]}"\n'
    )
    result = subprocess.run([bash], input=probe, text=True, capture_output=True, check=True)
    assert result.stdout.split() == ["keys"]
