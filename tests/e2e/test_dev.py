"""``workcoord dev``: everything embedded in one process (SQLite, in-process bus), driven over
REST, stopped with Ctrl-C, and started again on the same state folder."""

from __future__ import annotations

import queue
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.support.processes import STOP_TIMEOUT_SECONDS, free_port, service_env, workcoord_command
from tests.support.rest import items_by_key, ok, rest_client, run_identity

from .harness import READY_TIMEOUT_SECONDS
from .rest import EXAMPLE_LANE

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group(name="e2e-dev")]

READY_LINE = "workcoord dev: ready"


@dataclass
class DevProcess:
    """``workcoord dev`` with its output read line by line in the background."""

    state_dir: Path
    coordinator_port: int
    recovery_port: int
    gateway_port: int
    process: subprocess.Popen[str] | None = None
    env: dict[str, str] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    _queue: queue.Queue[str | None] = field(default_factory=queue.Queue)

    @property
    def gateway_url(self) -> str:
        return f"http://127.0.0.1:{self.gateway_port}"

    def start(self) -> None:
        self.lines.clear()
        self._queue = queue.Queue()
        # No WORKCOORD_* variable at all: in particular no WORKCOORD_BOOTSTRAP_ADMIN_TOKEN.
        self.process = subprocess.Popen(
            [
                *workcoord_command(),
                "dev",
                "--state-dir",
                str(self.state_dir),
                "--coordinator-port",
                str(self.coordinator_port),
                "--recovery-port",
                str(self.recovery_port),
                "--gateway-port",
                str(self.gateway_port),
            ],
            env=service_env(**self.env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        threading.Thread(target=self._read, args=(self.process,), daemon=True).start()

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_for_line(self, text: str, timeout: float = READY_TIMEOUT_SECONDS) -> None:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"no {text!r} in time:\n{self.output()}"
            try:
                line = self._queue.get(timeout=remaining)
            except queue.Empty:
                continue
            assert line is not None, f"workcoord dev ended before {text!r}:\n{self.output()}"
            self.lines.append(line)
            if text in line:
                return

    def drain(self) -> None:
        while True:
            try:
                line = self._queue.get(timeout=1.0)
            except queue.Empty:
                return
            if line is None:
                return
            self.lines.append(line)

    def output(self) -> str:
        return "\n".join(self.lines)

    def interrupt(self) -> int:
        """Ctrl-C (SIGINT) and wait for the exit code."""
        assert self.process is not None
        self.process.send_signal(signal.SIGINT)
        try:
            code = self.process.wait(STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(
                f"workcoord dev did not stop on SIGINT:\n{self.output()}"
            ) from None
        self.drain()
        return code

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def dev(tmp_path: Path) -> Iterator[DevProcess]:
    running = DevProcess(
        state_dir=tmp_path / "state",
        coordinator_port=free_port(),
        recovery_port=free_port(),
        gateway_port=free_port(),
    )
    try:
        yield running
    finally:
        running.kill()


def announced_token(output: str) -> str:
    match = re.search(r"^admin token\s+(\S+)\s+\((\w[\w ]*)\)$", output, re.MULTILINE)
    assert match, output
    return match.group(1)


def assert_login_url_opens_the_admin_page(dev: DevProcess) -> None:
    """The printed one-time login URL sets the session, and ``/`` then sends the bootstrap
    admin to the admin page (a page, not a 404)."""
    match = re.search(r"^web UI login\s+(\S+)", dev.output(), re.MULTILINE)
    assert match, dev.output()
    with httpx.Client(timeout=30.0) as browser:
        signed_in = browser.get(match.group(1), headers={"Accept": "text/html"})
        assert signed_in.status_code == 303 and signed_in.headers["location"] == "/"
        session = signed_in.cookies["workcoord_session"]
        # Sent by hand: httpx's cookie jar keeps no cookie for a bare IP address.
        home = browser.get(
            f"{dev.gateway_url}/", headers={"Cookie": f"workcoord_session={session}"}
        )
        assert home.status_code == 303, home.text
        assert home.headers["location"] == "/admin/work-coordinator"
        page = browser.get(
            f"{dev.gateway_url}/admin/work-coordinator",
            headers={"Cookie": f"workcoord_session={session}"},
        )
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")


def test_dev_runs_everything_and_keeps_its_state(dev: DevProcess) -> None:
    dev.start()
    dev.wait_for_line(READY_LINE)
    token = announced_token(dev.output())
    assert "(generated)" in dev.output()
    token_file = dev.state_dir / "admin-token"
    assert token_file.read_text().strip() == token
    assert token_file.stat().st_mode & 0o777 == 0o600
    assert (dev.state_dir / "workcoord.db").is_file()
    assert f"export WORKCOORD_ADDRESS=127.0.0.1:{dev.coordinator_port} " in dev.output()
    assert_login_url_opens_the_admin_page(dev)

    admin = rest_client(dev.gateway_url, token)
    with admin:
        assert ok(admin.get("/readyz"))["status"] == "ready"
        assert ok(admin.get("/v1/me"))["platformAdmin"] is True
        ok(admin.post("/v1/orgs", json={"slug": "devorg", "displayName": "Dev"}))
        coordinator = ok(
            admin.post(
                "/v1/work-coordinators",
                json={
                    "scope": "ORG",
                    "digestOwner": "ops@acme.test",
                    "orgSlug": "devorg",
                    "displayName": "Dev work",
                },
            )
        )
        base = f"/v1/work-coordinators/{coordinator['coordinatorId']}"
        assert coordinator["revision"] == "1"
        key = ok(
            admin.post(
                "/v1/work-keys",
                json={
                    "displayName": "dev-fleet",
                    "orgSlug": "devorg",
                    "coordinatorIds": [coordinator["coordinatorId"]],
                    "capabilities": ["READ", "LEASE", "WRITE"],
                },
            )
        )
    worker = rest_client(dev.gateway_url, key["secret"])
    with worker:
        lane = ok(worker.post(f"{base}/lanes", json=EXAMPLE_LANE))
        leases = ok(
            worker.post(
                f"{base}/leases",
                json={
                    "workerId": "dev-machine",
                    "workerClass": "machine",
                    "maxItems": 1,
                    "leaseSeconds": 30,
                },
            )
        )["leases"]
        [lease] = leases
        lease_path = f"{base}/leases/{lease['leaseId']}"
        token_body = {"leaseToken": lease["leaseToken"]}
        ok(worker.post(f"{lease_path}/start", json={**token_body, "runIdentity": run_identity()}))
        ok(
            worker.post(
                f"{lease_path}/complete", json={**token_body, "evidence": {"summary": "ok"}}
            )
        )
        done_item = ok(worker.get(f"{base}/lanes/{lane['laneId']}/items/{lease['item']['itemId']}"))
        assert done_item["state"] == "SUCCEEDED"
        events_before = ok(worker.get(f"{base}/events", params={"pageSize": 500}))["events"]

    assert dev.interrupt() == 0, dev.output()
    assert "Traceback" not in dev.output(), dev.output()

    # Again on the same folder: the token is kept, the data persisted in SQLite.
    dev.start()
    dev.wait_for_line(READY_LINE)
    assert announced_token(dev.output()) == token
    assert "(state folder)" in dev.output()
    worker = rest_client(dev.gateway_url, key["secret"])
    admin = rest_client(dev.gateway_url, token)
    with admin, worker:
        assert ok(admin.get("/v1/me"))["platformAdmin"] is True
        assert ok(admin.get(base))["coordinatorId"] == coordinator["coordinatorId"]
        kept = ok(worker.get(f"{base}/lanes/{lane['laneId']}"))
        states = {key_: item["state"] for key_, item in items_by_key(kept).items()}
        assert states[lease["item"]["key"]] == "SUCCEEDED"
        assert sorted(states.values()) == ["QUEUED", "SUCCEEDED", "WAITING"]
        events_after = ok(worker.get(f"{base}/events", params={"pageSize": 500}))["events"]
        assert events_after == events_before
        revisions = [int(event["revision"]) for event in events_after]
        assert revisions == list(range(1, len(revisions) + 1))
        # Work continues where it stopped.
        [second] = ok(
            worker.post(
                f"{base}/leases",
                json={
                    "workerId": "dev-machine",
                    "workerClass": "machine",
                    "maxItems": 1,
                    "leaseSeconds": 30,
                    "runIdentity": run_identity(),
                },
            )
        )["leases"]
        assert second["item"]["key"] != lease["item"]["key"]
        ok(
            worker.post(
                f"{base}/leases/{second['leaseId']}/complete",
                json={"leaseToken": second["leaseToken"], "evidence": {"summary": "ok"}},
            )
        )
        assert ok(worker.get(f"{base}/lanes/{lane['laneId']}"))["items"][2]["state"] == "QUEUED"

    assert dev.interrupt() == 0, dev.output()
    assert "Traceback" not in dev.output(), dev.output()


def test_a_lease_retried_after_a_dev_restart_answers_the_same_lease(dev: DevProcess) -> None:
    """Before, every run drew a fresh service key and with it a fresh lease-token key: the
    retry after a restart answered ``[]`` while its item stayed held by the first lease."""
    dev.start()
    dev.wait_for_line(READY_LINE)
    token = announced_token(dev.output())
    with rest_client(dev.gateway_url, token) as admin:
        ok(admin.post("/v1/orgs", json={"slug": "retryorg", "displayName": "Retry"}))
        coordinator = ok(
            admin.post(
                "/v1/work-coordinators",
                json={
                    "scope": "ORG",
                    "digestOwner": "ops@acme.test",
                    "orgSlug": "retryorg",
                    "displayName": "Retry work",
                },
            )
        )
        key = ok(
            admin.post(
                "/v1/work-keys",
                json={
                    "displayName": "retry-fleet",
                    "orgSlug": "retryorg",
                    "coordinatorIds": [coordinator["coordinatorId"]],
                    "capabilities": ["READ", "LEASE", "WRITE"],
                },
            )
        )
    base = f"/v1/work-coordinators/{coordinator['coordinatorId']}"
    ask = {
        "workerId": "dev-machine",
        "workerClass": "machine",
        "maxItems": 1,
        "leaseSeconds": 300,
        "requestId": "lease-across-a-restart",
    }
    with rest_client(dev.gateway_url, key["secret"]) as worker:
        ok(worker.post(f"{base}/lanes", json=EXAMPLE_LANE))
        [first] = ok(worker.post(f"{base}/leases", json=ask))["leases"]
    assert dev.interrupt() == 0, dev.output()

    dev.start()
    dev.wait_for_line(READY_LINE)
    with rest_client(dev.gateway_url, key["secret"]) as worker:
        [again] = ok(worker.post(f"{base}/leases", json=ask))["leases"]
        assert (again["leaseId"], again["leaseToken"]) == (first["leaseId"], first["leaseToken"])
        ok(
            worker.post(
                f"{base}/leases/{again['leaseId']}/heartbeat",
                json={"leaseToken": again["leaseToken"]},
            )
        )
    assert dev.interrupt() == 0, dev.output()
    assert "Traceback" not in dev.output(), dev.output()
