"""What users hit with the CLI: output into a closed pipe, ``-o table`` on every read, fish
completion, the verbs REST had first, ``WORKCOORD_LOG_JSON`` in ``workcoord dev``."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workcoord.api.v1 import lane_pb2, work_coordinator_pb2, worker_pb2
from workcoord.cli import dev
from workcoord.cli.common import CliError
from workcoord.cli.main import EXIT_BROKEN_PIPE, build_parser, main
from workcoord.kit.logging import JsonFormatter, json_logs_from_env

from .fakes import GOOD_TOKEN, FakeCoordinator


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --- a closed pipe ----------------------------------------------------------------------------


def _into_closed_pipe(*argv: str) -> subprocess.CompletedProcess[str]:
    """Run ``workcoord ARGV`` with stdout a pipe whose reader has already gone (as in
    ``workcoord … | head -1`` once head has exited): every write fails with EPIPE."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-m", "workcoord.cli.main", *argv],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,  # only ends a hang: a loaded machine starts Python slowly
            check=False,
        )
    finally:
        os.close(write_end)


def test_output_into_a_closed_pipe_ends_quietly() -> None:
    done = _into_closed_pipe("completion", "bash")
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert done.returncode == EXIT_BROKEN_PIPE


def test_a_read_into_a_closed_pipe_ends_quietly(coordinator: FakeCoordinator) -> None:
    done = _into_closed_pipe(
        "events", "--coordinator", "wc-1", "--address", coordinator.address, "-o", "table"
    )
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == EXIT_BROKEN_PIPE


# --- -o table on every list and get ---------------------------------------------------------


def _reads(node: object, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], object]]:
    import argparse

    assert isinstance(node, argparse.ArgumentParser)
    found: list[tuple[tuple[str, ...], object]] = []
    for action in node._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                if name in (
                    *("list", "get", "view", "why", "events", "digest"),
                    *("summary", "escalations"),
                ):
                    found.append(((*path, name), child))
                found.extend(_reads(child, (*path, name)))
    return found


def test_every_list_and_get_takes_output_table() -> None:
    # `config get|list` read the local file, not the server: they print its own plain form.
    reads = [(path, parser) for path, parser in _reads(build_parser()) if path[0] != "config"]
    assert len(reads) >= 15
    missing = [
        " ".join(path)
        for path, parser in reads
        if "--output" not in parser._option_string_actions  # type: ignore[attr-defined]
    ]
    assert missing == []


def test_admin_users_list_renders_a_table(
    coordinator: FakeCoordinator, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(
        capsys, "admin", "users", "list", "-o", "table", "--address", coordinator.address
    )
    assert code == 0, err
    assert out.splitlines() == [
        "USER ID  EMAIL          DISPLAY NAME",
        "u1       ada@acme.test  Ada",
    ]


# --- fish -------------------------------------------------------------------------------------


def test_completion_fish_knows_the_tree(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "completion", "fish")
    assert code == 0
    assert "complete -c workcoord" in out
    assert "        case 'lane blocker'\n            echo '-h --help add resolve'" in out


# CI installs fish (.ci/run) and runs this there; a developer's machine without fish skips it.
@pytest.mark.skipif(
    shutil.which("fish") is None and not os.environ.get("CI"), reason="fish is not installed"
)
def test_completion_fish_completes_in_fish(tmp_path: Path) -> None:
    script = tmp_path / "workcoord.fish"
    script.write_text(main_output("completion", "fish"), encoding="utf-8")
    done = subprocess.run(
        ["fish", "--no-config", "-c", f"source {script}; complete -C 'workcoord lane bl'"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.split() == ["blocker"]
    done = subprocess.run(
        ["fish", "--no-config", "-c", f"source {script}; complete -C 'workcoord admin '"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert {"orgs", "keys", "users"} <= set(done.stdout.split())


def main_output(*argv: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "workcoord.cli.main", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


# --- verbs REST had first ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "method", "expected"),
    [
        (
            ["worker", "list", "--coordinator", "wc-1"],
            "ListWorkers",
            worker_pb2.ListWorkersRequest(coordinator_id="wc-1"),
        ),
        (
            ["worker", "forget", "w1", "--coordinator", "wc-1"],
            "ForgetWorker",
            worker_pb2.ForgetWorkerRequest(coordinator_id="wc-1", worker_id="w1"),
        ),
        (
            ["item", "get", "it-1", "--lane", "ln-1", "--coordinator", "wc-1"],
            "GetItem",
            lane_pb2.GetItemRequest(coordinator_id="wc-1", lane_id="ln-1", item_id="it-1"),
        ),
        (
            [
                "lane",
                "blocker",
                "add",
                "ln-1",
                "--reason",
                "waits for legal",
                "--coordinator",
                "wc-1",
            ],
            "AddBlocker",
            lane_pb2.AddBlockerRequest(
                coordinator_id="wc-1",
                lane_id="ln-1",
                blocker=lane_pb2.Blocker(reason="waits for legal"),
            ),
        ),
        (
            ["lane", "blocker", "resolve", "ln-1", "bl-1", "--note", "ok", "--coordinator", "wc-1"],
            "ResolveBlocker",
            lane_pb2.ResolveBlockerRequest(
                coordinator_id="wc-1", lane_id="ln-1", blocker_id="bl-1", note="ok"
            ),
        ),
        (
            [
                *("lane", "ticket", "link", "ln-1", "--tracker", "github"),
                *("--key", "acme/p#1", "--coordinator", "wc-1"),
            ],
            "LinkTicket",
            lane_pb2.LinkTicketRequest(
                coordinator_id="wc-1",
                lane_id="ln-1",
                ticket=lane_pb2.Ticket(tracker="github", key="acme/p#1"),
            ),
        ),
        # A parent steering its children (``workcoord children``): --coordinator is the parent.
        (
            ["children", "summary", "wc-child", "--coordinator", "wc-1"],
            "GetChildSummary",
            work_coordinator_pb2.GetChildSummaryRequest(coordinator_id="wc-1", child_id="wc-child"),
        ),
        (
            ["children", "escalations", "wc-child", "--coordinator", "wc-1"],
            "ListChildEscalations",
            work_coordinator_pb2.ListChildEscalationsRequest(
                coordinator_id="wc-1", child_id="wc-child"
            ),
        ),
        (
            [
                *("children", "assign", "wc-child", "--lane", "ln-1", "--item", "it-1"),
                *("--worker", "w1", "--coordinator", "wc-1"),
            ],
            "AssignChildWork",
            work_coordinator_pb2.AssignChildWorkRequest(
                coordinator_id="wc-1",
                child_id="wc-child",
                lane_id="ln-1",
                item_id="it-1",
                worker_id="w1",
            ),
        ),
        (
            [
                *("children", "steer", "wc-child", "--lane", "ln-1", "--priority", "90"),
                *("--coordinator", "wc-1"),
            ],
            "SteerChildWork",
            work_coordinator_pb2.SteerChildWorkRequest(
                coordinator_id="wc-1", child_id="wc-child", lane_id="ln-1", priority=90
            ),
        ),
        (
            [
                *("children", "escalate", "wc-child", "--lane", "ln-1", "--item", "it-1"),
                *("--reason", "stuck on review", "--coordinator", "wc-1"),
            ],
            "EscalateChildWork",
            work_coordinator_pb2.EscalateChildWorkRequest(
                coordinator_id="wc-1",
                child_id="wc-child",
                lane_id="ln-1",
                item_id="it-1",
                reason="stuck on review",
            ),
        ),
    ],
)
def test_verbs_that_only_rest_had(
    coordinator: FakeCoordinator,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    method: str,
    expected: object,
) -> None:
    code, _, err = _run(capsys, *argv, "--address", coordinator.address, "--token", GOOD_TOKEN)
    assert code == 0, err
    assert coordinator.recorded.last(method)[0] == expected


def test_item_create_reads_the_item_file(
    coordinator: FakeCoordinator, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    item = tmp_path / "item.json"
    item.write_text('{"key": "d", "kind": "TASK", "workerClass": "machine"}', encoding="utf-8")
    code, _, err = _run(
        capsys,
        *("item", "create", "--lane", "ln-1", "--file", str(item), "--coordinator", "wc-1"),
        *("--address", coordinator.address),
    )
    assert code == 0, err
    request, _ = coordinator.recorded.last("CreateItem")
    assert isinstance(request, lane_pb2.CreateItemRequest)
    assert (request.lane_id, request.item.key, request.item.worker_class) == (
        "ln-1",
        "d",
        "machine",
    )


def test_worker_report_reads_the_worker_file(
    coordinator: FakeCoordinator, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    worker = tmp_path / "worker.json"
    worker.write_text(
        '{"workerId": "w9", "workerClass": "machine", "capabilities": ["gpu"], "cpuCount": 8}',
        encoding="utf-8",
    )
    code, out, err = _run(
        capsys,
        *("worker", "report", "--file", str(worker), "--coordinator", "wc-1"),
        *("--address", coordinator.address),
    )
    assert code == 0, err
    request, _ = coordinator.recorded.last("ReportWorker")
    assert request == worker_pb2.ReportWorkerRequest(
        coordinator_id="wc-1",
        worker=worker_pb2.Worker(
            worker_id="w9", worker_class="machine", capabilities=["gpu"], cpu_count=8
        ),
    )
    assert '"workerId": "w9"' in out


def test_worker_report_refuses_a_malformed_file(
    coordinator: FakeCoordinator, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    worker = tmp_path / "worker.json"
    worker.write_text('{"workerId": "w9", "noSuchField": 1}', encoding="utf-8")
    code, _, err = _run(
        capsys,
        *("worker", "report", "--file", str(worker), "--coordinator", "wc-1"),
        *("--address", coordinator.address),
    )
    assert code != 0
    assert "noSuchField" in err
    assert [call for call in coordinator.recorded.calls if call[0] == "ReportWorker"] == []


# --- WORKCOORD_LOG_JSON in workcoord dev ------------------------------------------------------


@pytest.fixture
def _restore_logging() -> object:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield None
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)


def test_dev_honours_workcoord_log_json(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    _restore_logging: object,
) -> None:
    def stop_here(options: object) -> object:
        raise CliError("stopped by the test after logging was configured")

    monkeypatch.setattr(dev, "prepare_state", stop_here)
    monkeypatch.setenv("WORKCOORD_LOG_JSON", "true")
    code, _, err = _run(capsys, "dev", "--state-dir", str(tmp_path))
    assert code == 1 and "stopped by the test" in err
    ours = [h for h in logging.getLogger().handlers if getattr(h, "_workcoord", False)]
    assert len(ours) == 1 and isinstance(ours[0].formatter, JsonFormatter)


def test_dev_refuses_a_malformed_workcoord_log_json(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], _restore_logging: object
) -> None:
    monkeypatch.setenv("WORKCOORD_LOG_JSON", "maybe")
    code, _, err = _run(capsys, "dev")
    assert code == 2
    assert "WORKCOORD_LOG_JSON" in err


def test_json_logs_from_env_reads_booleans() -> None:
    assert json_logs_from_env({}) is False
    assert json_logs_from_env({"WORKCOORD_LOG_JSON": "TRUE"}) is True
    assert json_logs_from_env({"WORKCOORD_LOG_JSON": "0"}) is False
    with pytest.raises(ValueError, match="WORKCOORD_LOG_JSON"):
        json_logs_from_env({"WORKCOORD_LOG_JSON": "2"})
