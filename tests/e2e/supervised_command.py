"""The command the supervisor tests run (``python supervised_command.py``), as any worker would:
it reads its item from the environment and ``WORKCOORD_INPUTS_FILE``, writes a report of what
it saw into ``$REPORT_DIR/<item>-<attempt>.json``, then does what ``inputs.mode`` says.

Modes: ``evidence`` (write ``inputs.evidence`` to the evidence file, exit 0), ``plain`` (exit
0), ``fail`` (exit ``inputs.status``), ``checkpoint`` (write ``inputs.checkpoint``, exit
``inputs.status``), ``hang`` (start a ``sleep`` child, then wait forever; with
``inputs.ignoreTerm`` both ignore SIGTERM), ``workflow`` (by item kind: BUILD/FIX evidence, the
first REVIEW FAIL with findings then PASS, SHIP a receipt), ``gate`` (wait until the file
``$REPORT_DIR/<inputs.gate>`` exists, then exit 0 with ``inputs.evidence``; exit 9 if it has
not appeared within two minutes).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def main() -> int:
    report_dir = Path(os.environ["REPORT_DIR"])
    inputs: dict[str, Any] = json.loads(Path(os.environ["WORKCOORD_INPUTS_FILE"]).read_text())
    mode = inputs.get("mode", "plain")
    record: dict[str, Any] = {
        "pid": os.getpid(),
        "pgid": os.getpgid(0),
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "inputs": inputs,
    }
    if mode == "hang":
        if inputs.get("ignoreTerm"):
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the child inherits it
        child = subprocess.Popen(["sleep", "600"])
        record["childPid"] = child.pid
    name = f"{os.environ['WORKCOORD_ITEM_ID']}-{os.environ['WORKCOORD_ATTEMPT']}.json"
    temporary = report_dir / f".{name}.tmp"
    temporary.write_text(json.dumps(record))
    os.replace(temporary, report_dir / name)

    if mode == "hang":
        while True:
            signal.pause()
    if mode == "workflow":
        return workflow(report_dir)
    if mode == "gate":
        gate = report_dir / inputs["gate"]
        deadline = time.monotonic() + 120
        while not gate.exists():
            if time.monotonic() > deadline:
                return 9
            time.sleep(0.02)
        write(os.environ["WORKCOORD_EVIDENCE_FILE"], inputs["evidence"])
    if mode == "evidence":
        write(os.environ["WORKCOORD_EVIDENCE_FILE"], inputs["evidence"])
    if mode == "checkpoint":
        write(os.environ["WORKCOORD_CHECKPOINT_FILE"], inputs["checkpoint"])
    return int(inputs.get("status", 0))


def workflow(report_dir: Path) -> int:
    kind = os.environ["WORKCOORD_ITEM_KIND"]
    evidence: dict[str, Any] = {"summary": f"{kind.lower()} done"}
    if kind == "REVIEW":
        reviews = report_dir / "reviews"
        seen = int(reviews.read_text()) if reviews.exists() else 0
        reviews.write_text(str(seen + 1))
        evidence = (
            {"verdict": "FAIL", "findings": ["parser drops the last token"], "summary": "no"}
            if seen == 0
            else {"verdict": "PASS", "summary": "looks right"}
        )
    elif kind == "SHIP":
        evidence = {"receipt": {"environment": "prod", "version": "1.4.2", "url": "https://x"}}
    write(os.environ["WORKCOORD_EVIDENCE_FILE"], evidence)
    return 0


def write(path: str, document: object) -> None:
    Path(path).write_text(json.dumps(document))


if __name__ == "__main__":
    sys.exit(main())
