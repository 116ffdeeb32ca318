"""``workcoord worker run`` without a coordinator of its own: start-up checks (nothing is leased
when they fail), the command's environment and outcome, the output, and a whole item against the
fake coordinator."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from workcoord.api.v1 import lane_pb2, worker_pb2
from workcoord.cli.main import build_parser, main
from workcoord.cli.supervisor import (
    AttemptFiles,
    Reporter,
    attempt_files,
    child_environment,
    command_outcome,
    config_from_args,
    default_worker_id,
    inputs_document,
)
from workcoord.client.worker_loop import Checkpointed, Completed, Failed, Released

from .fakes import GOOD_TOKEN, LATE_CLASS, SPENT_CLASS, FakeCoordinator

ROOT = Path(__file__).resolve().parents[3]
WORKER_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}")


@pytest.fixture
def labels(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKCOORD_AGENT_ID", "agent-7")
    monkeypatch.setenv("WORKCOORD_AGENT_ENGINE", "shell")
    monkeypatch.setenv("WORKCOORD_AGENT_ACCOUNT", "fleet-bot")


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git checkout on branch ``fix/parser``, the current directory."""
    repo = Path(os.path.realpath(tmp_path)) / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "fix/parser", str(repo)], check=True)
    monkeypatch.chdir(repo)
    return repo


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["worker", "run", *argv])
    out, err = capsys.readouterr()
    return code, out, err


# --------------------------------------------------------------------------- start-up


def test_missing_labels_are_named_and_nothing_is_leased(
    coordinator: FakeCoordinator, checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(
        capsys, "--coordinator", "c1", "--class", "machine", "--address", coordinator.address,
        "--", "true",
    )  # fmt: skip
    assert code == 2
    for name in ("WORKCOORD_AGENT_ID", "WORKCOORD_AGENT_ENGINE", "WORKCOORD_AGENT_ACCOUNT"):
        assert name in err
    assert coordinator.recorded.calls == []


@pytest.mark.parametrize(
    ("roots", "message"),
    [
        ("[1, 2", "is not JSON"),
        ('["relative"]', "must be an absolute path"),
        (json.dumps(["/"] * 65), "at most 64"),
    ],
)
def test_bad_roots_stop_the_start(
    roots: str,
    message: str,
    labels: None,
    coordinator: FakeCoordinator,
    checkout: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WORKCOORD_WORKER_REPOSITORY_ROOTS", roots)
    code, _, err = run_cli(
        capsys, "--coordinator", "c1", "--class", "machine", "--address", coordinator.address,
        "--", "true",
    )  # fmt: skip
    assert code == 2
    assert "WORKCOORD_WORKER_REPOSITORY_ROOTS" in err and message in err
    assert coordinator.recorded.calls == []


def test_a_directory_that_is_no_checkout_needs_a_branch(
    labels: None,
    coordinator: FakeCoordinator,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(capsys, "--coordinator", "c1", "--class", "machine", "--", "true")
    assert code == 2 and "not a git checkout" in err and "--branch" in err
    assert coordinator.recorded.calls == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--", "no-such-program-here"], "command not found: no-such-program-here"),
        ([], "no command given"),
        (
            ["--account", "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", "--", "true"],
            "credential",
        ),
    ],
)
def test_usage_problems_are_refused_before_leasing(
    argv: list[str],
    message: str,
    labels: None,
    coordinator: FakeCoordinator,
    checkout: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run_cli(
        capsys, "--coordinator", "c1", "--class", "machine", "--address", coordinator.address,
        *argv,
    )  # fmt: skip
    assert code == 2 and message in err
    assert coordinator.recorded.calls == []


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--coordinator", "c1,,c2", "--class", "machine"], "--coordinator 'c1,,c2'"),
        (["--coordinator", "c1", "--class", "machine,"], "--class 'machine,'"),
    ],
)
def test_an_empty_entry_of_a_list_is_refused_before_leasing(
    flags: list[str],
    message: str,
    labels: None,
    coordinator: FakeCoordinator,
    checkout: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run_cli(capsys, *flags, "--address", coordinator.address, "--", "true")
    assert code == 2 and message in err and "empty entry" in err
    assert coordinator.recorded.calls == []


def test_lists_of_coordinators_and_classes_are_read_in_order(checkout: Path) -> None:
    environ = {"WORKCOORD_AGENT_ID": "a", "WORKCOORD_AGENT_ENGINE": "e"}
    args = build_parser().parse_args(
        ["worker", "run", "--coordinator", "c1, c2,c1", "--class", "machine,agent",
         "--account", "fleet", "--agent-id", "a", "--engine", "e", "--", "true"]
    )  # fmt: skip
    config = config_from_args(args, environ)
    assert config.coordinator_ids == ("c1", "c2")
    assert (config.worker_classes, config.worker_class) == (("machine", "agent"), "machine")
    assert config.worker_id == default_worker_id("machine-agent", str(checkout))


def test_concurrency_is_read_into_the_config(checkout: Path) -> None:
    environ = {"WORKCOORD_AGENT_ID": "a", "WORKCOORD_AGENT_ENGINE": "e"}
    argv = ["worker", "run", "--coordinator", "c1", "--class", "machine", "--account", "f",
            "--agent-id", "a", "--engine", "e"]  # fmt: skip
    config = config_from_args(build_parser().parse_args([*argv, "--", "true"]), environ)
    assert config.concurrency == 1  # one item at a time unless asked
    args = build_parser().parse_args([*argv, "--concurrency", "8", "--", "true"])
    assert config_from_args(args, environ).concurrency == 8


@pytest.mark.parametrize(
    "flag",
    [
        "--lease-seconds=4",
        "--lease-seconds=301",
        "--wait-seconds=61",
        "--concurrency=0",
        "--concurrency=101",
    ],
)
def test_lease_limits_are_checked_by_the_parser(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["worker", "run", "--class", "machine", flag, "--", "true"])
    assert caught.value.code == 2
    assert "must be between" in capsys.readouterr().err


# --------------------------------------------------------------------------- one item


def test_one_item_against_the_fake_coordinator(
    labels: None,
    coordinator: FakeCoordinator,
    checkout: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WORKCOORD_TOKEN", GOOD_TOKEN)
    script = (
        'test -z "$WORKCOORD_TOKEN" && '
        'echo "{\\"summary\\": \\"$PWD\\"}" > "$WORKCOORD_EVIDENCE_FILE"'
    )
    code, out, _ = run_cli(
        capsys, "--coordinator", "c1", "--class", "machine", "--address", coordinator.address,
        "--once", "--json", "--", "sh", "-c", script,
    )  # fmt: skip
    assert code == 0, out
    events = [json.loads(line) for line in out.splitlines()]
    assert [e["event"] for e in events] == [
        "ready", "waiting", "leased", "started", "running", "completed", "exit",
    ], out  # fmt: skip
    lease, _ = coordinator.recorded.last("Lease")
    start, _ = coordinator.recorded.last("Start")
    complete, _ = coordinator.recorded.last("Complete")
    assert isinstance(lease, worker_pb2.LeaseRequest) and lease.request_id
    assert isinstance(start, worker_pb2.StartRequest)
    identity = start.run_identity
    assert (identity.pid, identity.branch) == (os.getpid(), "fix/parser")
    assert identity.worktree_path == str(checkout)
    assert isinstance(complete, worker_pb2.CompleteRequest)
    assert complete.evidence.summary == str(checkout)  # ran there, without the credential
    assert "wcl_token" not in out


@pytest.mark.parametrize("told", [SPENT_CLASS, LATE_CLASS])
def test_a_heartbeats_stop_ends_the_process_group_and_reports_the_final_usage(
    told: str,
    labels: None,
    coordinator: FakeCoordinator,
    checkout: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """Told to stop, worker run sends SIGTERM to the whole group (a child that ignores it is
    killed after the grace), then sends the final usage: on a heartbeat before the release
    for a spent budget, on the (retryable) fail for a deadline."""
    monkeypatch.setenv("WORKCOORD_TOKEN", GOOD_TOKEN)
    pids = tmp_path / "pids"
    script = (
        'echo \'{"costMicros": "400000"}\' > "$WORKCOORD_USAGE_FILE"; '
        "sh -c 'trap \"\" TERM; while :; do sleep 1; done' & echo $! > " + str(pids) + "; "
        'echo \'{"costMicros": "1200000"}\' > "$WORKCOORD_USAGE_FILE"; '
        "while :; do sleep 1; done"
    )
    code, out, _ = run_cli(
        capsys, "--coordinator", "c1", "--class", told, "--address", coordinator.address,
        "--once", "--json", "--lease-seconds", "5", "--kill-grace", "1", "--", "sh", "-c", script,
    )  # fmt: skip
    assert code == 0, out
    events = [json.loads(line) for line in out.splitlines()]
    kinds = [e["event"] for e in events]
    assert "stop_told" in kinds and "forwarded" in kinds, out
    forwarded = next(e for e in events if e["event"] == "forwarded")
    assert forwarded["signal"] == "SIGTERM"
    # The child that ignored SIGTERM is gone too (at most a zombie nobody reaped yet).
    # SIGKILL was sent; the kernel may take a moment to tear the process down.
    child = int(pids.read_text())
    deadline = time.monotonic() + 30
    while not _gone(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(child), Path(f"/proc/{child}/stat").read_text()
    if told == SPENT_CLASS:
        release, _ = coordinator.recorded.last("Release")
        assert isinstance(release, worker_pb2.ReleaseRequest)
        assert "BUDGET_EXHAUSTED" in release.reason
        beat, _ = coordinator.recorded.last("Heartbeat")
        assert isinstance(beat, worker_pb2.HeartbeatRequest)
        assert beat.usage.cost_micros == 1_200_000
        methods = [m for m, *_ in coordinator.recorded.calls]
        assert methods.index("Release") > max(i for i, m in enumerate(methods) if m == "Heartbeat")
    else:
        fail, _ = coordinator.recorded.last("Fail")
        assert isinstance(fail, worker_pb2.FailRequest)
        assert fail.error.type == "DEADLINE_EXCEEDED" and fail.error.retryable
        assert fail.usage.cost_micros == 1_200_000


def _gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


# --------------------------------------------------------------------------- pieces


def test_the_command_never_sees_a_credential() -> None:
    base = {
        "PATH": "/usr/bin",
        "WORKCOORD_ADDRESS": "10.0.0.1:50051",
        "WORKCOORD_TOKEN": "wck_abc",
        "WORKCOORD_LEASE_TOKEN": "wcl_def",
        "WORKCOORD_SERVICE_KEY": "wcsvc_x",
        "WORKCOORD_GITHUB_TOKEN": "ghp_y",
        "MY_COPY": "Bearer wck_abc",
    }
    env = child_environment(base, "wck_abc", {"WORKCOORD_LEASE_ID": "ls_1"})
    assert env == {
        "PATH": "/usr/bin",
        "WORKCOORD_ADDRESS": "10.0.0.1:50051",
        "WORKCOORD_LEASE_ID": "ls_1",
    }


def test_the_default_worker_id_is_stable_and_valid() -> None:
    one = default_worker_id("machine", "/srv/lanes/a")
    assert WORKER_ID.fullmatch(one)
    assert one == default_worker_id("machine", "/srv/lanes/a")
    assert one != default_worker_id("machine", "/srv/lanes/b")
    assert "-machine-" in one


def test_inputs_keep_whole_numbers_whole() -> None:
    item = worker_pb2.LeasedItem()
    item.inputs.update({"n": 3, "x": 0.5, "nested": {"list": [1, 2.5]}, "s": "t"})
    assert inputs_document(item) == {"n": 3, "x": 0.5, "nested": {"list": [1, 2.5]}, "s": "t"}


@pytest.fixture
def files() -> Iterator[AttemptFiles]:
    item = worker_pb2.LeasedItem()
    item.inputs.update({"worktree": "/srv/x"})
    with attempt_files(item) as made:
        assert made.directory.stat().st_mode & 0o777 == 0o700
        assert made.inputs.stat().st_mode & 0o777 == 0o600
        assert json.loads(made.inputs.read_text()) == {"worktree": "/srv/x"}
        yield made
    assert not made.directory.exists()


def test_exit_statuses(files: AttemptFiles) -> None:
    assert command_outcome("make", 0, 0, files) == Completed(
        lane_pb2.Evidence(summary="make exited 0")
    )
    assert command_outcome("make", 2, 0, files) == Failed(
        "make exited with status 2", error_type="EXIT_STATUS"
    )
    assert command_outcome("make", -9, 0, files) == Failed(
        "make was killed by SIGKILL", error_type="SIGNAL"
    )
    stopped = command_outcome("make", -15, 15, files)
    assert isinstance(stopped, Released) and "SIGTERM" in stopped.reason
    assert isinstance(command_outcome("make", 0, 15, files), Completed)


def test_evidence_file(files: AttemptFiles) -> None:
    files.evidence.write_text(
        json.dumps({"verdict": "FAIL", "findings": ["no tests"], "summary": "reviewed"})
    )
    outcome = command_outcome("review", 0, 0, files)
    assert isinstance(outcome, Completed)
    assert outcome.evidence.verdict == lane_pb2.Evidence.FAIL
    assert list(outcome.evidence.findings) == ["no tests"]
    # Evidence only counts on success: a failing command fails.
    assert isinstance(command_outcome("review", 1, 0, files), Failed)


@pytest.mark.parametrize(
    "text", ['{"verdict": "MAYBE"}', '{"unknownField": 1}', "not json", '["a"]']
)
def test_a_malformed_evidence_file_fails_for_a_human(files: AttemptFiles, text: str) -> None:
    files.evidence.write_text(text)
    outcome = command_outcome("review", 0, 0, files)
    assert isinstance(outcome, Failed)
    assert (outcome.error_type, outcome.retryable) == ("INVALID_EVIDENCE", False)


def test_an_empty_evidence_file_is_no_evidence(files: AttemptFiles) -> None:
    files.evidence.write_text("")
    assert command_outcome("x", 0, 0, files) == Completed(lane_pb2.Evidence(summary="x exited 0"))


def test_a_checkpoint_file_wins_over_the_exit_status(files: AttemptFiles) -> None:
    files.checkpoint.write_text(json.dumps({"summary": "half", "filesChanged": ["a.py"]}))
    for status, stopped_by in ((0, 0), (1, 0), (-15, 15)):
        outcome = command_outcome("agent", status, stopped_by, files)
        assert isinstance(outcome, Checkpointed)
        assert list(outcome.checkpoint.files_changed) == ["a.py"]


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ({"summary": "x" * 9000}, "8 KiB"),
        ({"blockedReason": "bored"}, "blocked_reason"),
        ({"nextStep": "?"}, "nextStep"),
    ],
)
def test_a_checkpoint_file_follows_the_apis_rules(
    files: AttemptFiles, document: dict[str, object], problem: str
) -> None:
    files.checkpoint.write_text(json.dumps(document))
    outcome = command_outcome("agent", 0, 0, files)
    assert isinstance(outcome, Failed)
    assert (outcome.error_type, outcome.retryable) == ("INVALID_CHECKPOINT", False)
    assert problem in outcome.message


def test_output_lines(capsys: pytest.CaptureFixture[str]) -> None:
    Reporter(json_output=False).emit("killed", detail="lease lost", lease="ls_1", pids=[4, 5])
    Reporter(json_output=True).emit("running", lease="ls_1", pid=42, branch="")
    text, document = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"\d\d:\d\d:\d\d killed lease=ls_1 pids=4,5 — lease lost", text)
    parsed = json.loads(document)
    assert (parsed["event"], parsed["lease"], parsed["pid"]) == ("running", "ls_1", 42)
    assert "branch" not in parsed


# --------------------------------------------------------------------------- packaging

SERVER_SIDE = {
    "workcoord-coordinator",
    "workcoord-recovery",
    "workcoord-gateway",
    "sqlalchemy",
    "asyncpg",
    "aiosqlite",
    "alembic",
    "starlette",
    "uvicorn",
}


def test_the_client_package_installs_without_the_server_side() -> None:
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    packages = {package["name"]: package for package in lock["package"]}
    needed: set[str] = set()
    todo = ["workcoord-client"]
    while todo:
        name = todo.pop()
        if name in needed:
            continue
        needed.add(name)
        todo.extend(dep["name"] for dep in packages[name].get("dependencies", []))
    assert not needed & SERVER_SIDE


def test_the_sdk_and_the_supervisor_import_without_the_server_side() -> None:
    """In a fresh interpreter where the server side's modules cannot be imported at all."""
    blocked = ["sqlalchemy", "asyncpg", "aiosqlite", "alembic", "starlette", "uvicorn"]
    blocked += ["workcoord.coordinator", "workcoord.gateway", "workcoord.recovery"]
    program = f"""
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in {blocked!r}):
            raise ImportError("blocked: " + name)
sys.meta_path.insert(0, Block())
import workcoord.client, workcoord.client.worker_sync
from workcoord.cli.main import build_parser, main
sys.exit(main(["worker", "run", "--help"]))
"""
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "--kill-grace" in done.stdout
