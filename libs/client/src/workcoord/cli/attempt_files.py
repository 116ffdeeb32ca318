"""An attempt's files under ``worker run``: the inputs written for the command, the evidence
and checkpoint it may leave, and what its end means for the attempt (:func:`command_outcome`)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import json_format

from workcoord.api.v1 import lane_pb2, worker_pb2
from workcoord.client.worker_loop import Checkpointed, Completed, Failed, Outcome, Released
from workcoord.kit.validation import validate

__all__ = [
    "CHECKPOINT_MAX_BYTES",
    "EVIDENCE_MAX_FILE_BYTES",
    "AttemptFiles",
    "attempt_files",
    "command_outcome",
    "inputs_document",
    "signal_name",
]

CHECKPOINT_MAX_BYTES = 8192  # CheckpointRequest.checkpoint's max_bytes
EVIDENCE_MAX_FILE_BYTES = 1024 * 1024


def inputs_document(item: worker_pb2.LeasedItem) -> dict[str, object]:
    """The item's inputs as plain JSON (whole numbers as integers: a ``Struct`` keeps every
    number as a double, and ``3.0`` surprises shell scripts)."""
    document = _whole_numbers(json_format.MessageToDict(item.inputs))
    assert isinstance(document, dict)
    return document


def _whole_numbers(value: object) -> object:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, dict):
        return {key: _whole_numbers(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_whole_numbers(inner) for inner in value]
    return value


@dataclass(frozen=True, slots=True)
class AttemptFiles:
    """The files of one attempt: the inputs written for the command, the evidence and the
    checkpoint it may leave behind."""

    directory: Path
    inputs: Path
    evidence: Path
    checkpoint: Path
    usage: Path


@contextlib.contextmanager
def attempt_files(item: worker_pb2.LeasedItem) -> Iterator[AttemptFiles]:
    """A private folder (0700) outside the worktree with the inputs file; removed afterwards."""
    directory = Path(tempfile.mkdtemp(prefix="workcoord-attempt-"))
    try:
        files = AttemptFiles(
            directory,
            directory / "inputs.json",
            directory / "evidence.json",
            directory / "checkpoint.json",
            directory / "usage.json",
        )
        descriptor = os.open(files.inputs, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            json.dump(inputs_document(item), out, indent=2, sort_keys=True)
            out.write("\n")
        yield files
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def command_outcome(program: str, status: int, stopped_by: int, files: AttemptFiles) -> Outcome:
    """What the command's end means for the attempt: its checkpoint file first; a drain that
    stopped it early releases; exit 0 completes (with its evidence file, or a summary);
    anything else fails with the status. Malformed files fail, not retryable."""
    if _nonempty(files.checkpoint):
        return _checkpoint_outcome(files.checkpoint)
    if stopped_by and status != 0:
        return Released(f"stopped by {signal_name(stopped_by)} before {program} finished")
    if status == 0:
        if _nonempty(files.evidence):
            return _evidence_outcome(files.evidence)
        return Completed(lane_pb2.Evidence(summary=f"{program} exited 0"))
    if status < 0:
        return Failed(f"{program} was killed by {signal_name(-status)}", error_type="SIGNAL")
    return Failed(f"{program} exited with status {status}", error_type="EXIT_STATUS")


def _checkpoint_outcome(path: Path) -> Outcome:
    checkpoint = lane_pb2.Checkpoint()

    def problem() -> str:
        if checkpoint.ByteSize() > CHECKPOINT_MAX_BYTES:
            return "checkpoint is over 8 KiB serialized"
        return "; ".join(f"{v.field}: {v.description}" for v in validate(checkpoint))

    refused = _read_file(path, checkpoint, "checkpoint", (CHECKPOINT_MAX_BYTES, "8 KiB"), problem)
    return refused if refused is not None else Checkpointed(checkpoint)


def _evidence_outcome(path: Path) -> Outcome:
    evidence = lane_pb2.Evidence()
    refused = _read_file(path, evidence, "evidence", (EVIDENCE_MAX_FILE_BYTES, "1 MiB"))
    return refused if refused is not None else Completed(evidence)


def _read_file(
    path: Path,
    message: lane_pb2.Evidence | lane_pb2.Checkpoint,
    what: str,
    limit: tuple[int, str],
    problem: Callable[[], str] = lambda: "",
) -> Failed | None:
    """Fill ``message`` from the ``what`` file at ``path`` (at most ``limit`` bytes, then
    ``problem`` asked); None when it is good, else the failure that names what is wrong."""
    error_type = f"INVALID_{what.upper()}"
    size = path.stat().st_size
    if size > limit[0]:
        return _bad_file(error_type, f"{what} file is {size} bytes (at most {limit[1]})")
    found = _parse_file(path, message) or problem()
    return _bad_file(error_type, f"{what} file: {found}") if found else None


def _parse_file(path: Path, message: lane_pb2.Evidence | lane_pb2.Checkpoint) -> str:
    """Fill ``message`` from proto3 JSON (unknown fields refused); the problem, or ''."""
    try:
        json_format.Parse(path.read_text(encoding="utf-8"), message)
    except (OSError, UnicodeDecodeError) as exc:
        return f"cannot read it: {exc}"
    except json_format.ParseError as exc:
        return str(exc)[:1024]
    return ""


def _bad_file(error_type: str, message: str) -> Failed:
    # The command's output is malformed: a retry would do the same. A human looks.
    return Failed(message, error_type=error_type, retryable=False)


def _nonempty(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except FileNotFoundError:
        return False


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"
