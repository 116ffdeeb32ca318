"""Two ``workcoord dev`` on one state folder: the second exits at once with a clear message
naming the running one's pid, and the first keeps serving. Two real processes."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.support.processes import STOP_TIMEOUT_SECONDS, free_port

from .test_dev import READY_LINE, DevProcess

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group(name="e2e-dev")]


def _dev(state_dir: Path) -> DevProcess:
    return DevProcess(
        state_dir=state_dir,
        coordinator_port=free_port(),
        recovery_port=free_port(),
        gateway_port=free_port(),
    )


def test_a_second_dev_on_a_busy_state_folder_exits_with_a_clear_message(tmp_path: Path) -> None:
    first, second = _dev(tmp_path / "state"), _dev(tmp_path / "state")
    try:
        first.start()
        first.wait_for_line(READY_LINE)
        assert first.process is not None

        second.start()
        assert second.process is not None
        code = second.process.wait(STOP_TIMEOUT_SECONDS)
        second.drain()
        assert code == 1, second.output()
        assert f"is in use by process {first.process.pid}" in second.output()
        assert "Traceback" not in second.output()
        assert READY_LINE not in second.output()

        # The first one never noticed.
        assert first.process.poll() is None
        assert httpx.get(f"{first.gateway_url}/healthz", timeout=10).status_code == 200
        assert first.interrupt() == 0
    finally:
        first.kill()
        second.kill()
