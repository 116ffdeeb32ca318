"""The chaos soak (``python -m bench.chaos``) for 60 seconds: faults of every kind under load, and
not one violation: no broken invariant, no acknowledged write lost, every abandoned lease expired,
every fault recovered from.

The soak brings its own PostgreSQL cluster and Redis (it needs PostgreSQL's server binaries and
``redis-server`` on this machine, not the shared servers). It waits for readiness and recovery
by polling with generous limits, so a busy machine makes it slower, never red; nothing here is
timed.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Heavy (eight server processes): kept on the worker that runs the end-to-end tests, so the two
# never overlap.
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.xdist_group(name="e2e"),
    pytest.mark.timeout(1800),
]


def _binaries_missing() -> str | None:
    if not glob.glob("/usr/lib/postgresql/*/bin/initdb") and shutil.which("initdb") is None:
        return "PostgreSQL's server binaries (initdb, pg_ctl)"
    if shutil.which("redis-server") is None:
        return "redis-server"
    return None


def test_a_60_second_soak_has_no_violation() -> None:
    missing = _binaries_missing()
    if missing is not None:
        pytest.skip(f"the chaos soak needs {missing}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("WORKCOORD_")}
    soak = subprocess.Popen(
        [sys.executable, "-m", "bench.chaos", "--seconds", "60"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        stdout, stderr = soak.communicate(timeout=1700)
    except subprocess.TimeoutExpired:
        # SIGTERM lets the soak stop its PostgreSQL, Redis and services before it exits.
        soak.terminate()
        stdout, stderr = soak.communicate(timeout=120)
    output = f"stdout:\n{stdout}\nstderr:\n{stderr[-20_000:]}"
    lines = stdout.strip().splitlines()
    assert lines, output
    result = json.loads(lines[-1])
    print(lines[-1])  # the soak's figures, shown with -s or -rA
    assert soak.returncode == 0, output
    assert result["ok"] is True, output
    assert result["violations"] == 0, output
    for count in (
        "lost",
        "double_live_attempts",
        "capacity_overruns",
        "gaps",
        "other_invariant_violations",
        "unexpired_abandoned",
    ):
        assert result[count] == 0, f"{count}: {output}"
    assert result["unrecovered_faults"] == [], output
    kinds = {fault["kind"] for fault in result["faults"]}
    assert kinds == {"coordinator", "gateway", "recovery", "redis", "postgres"}, output
    # Each recovery fault killed the replica leading at that moment, not a fixed one.
    recoveries = [fault for fault in result["faults"] if fault["kind"] == "recovery"]
    assert all(fault.get("leader") is True for fault in recoveries), output
    assert result["writes_acknowledged"] > 0, output
    # The load did what it is there for: lanes created, their work leased, heartbeated and
    # ended. A load refused at its first step (a lane its work key may not create) would
    # otherwise pass with nothing but empty Leases to audit.
    done = result["acknowledged_by_call"]
    for call in ("CreateLane", "Lease", "Heartbeat", "Complete"):
        assert done.get(call, 0) > 0, f"no {call} acknowledged: {output}"
