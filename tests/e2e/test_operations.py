"""Operating workcoord from the command line, as an operations team would.

- A busy port (gRPC, HTTP or metrics) stops every service and ``workcoord dev`` with one line
  and exit 1; nothing starts half-bound or shares the port.
- An unmigrated database stops the coordinator with one line naming ``workcoord db upgrade``;
  a later release's schema that does not admit this one stops ``dev``, ``serve`` and
  ``db upgrade`` with one line naming both revisions, and ``dev`` runs on one that does.
- ``workcoord db backup`` (online, mode 0600) and ``db restore`` round-trip the embedded
  database; restore refuses while ``workcoord dev`` holds the folder; ``db upgrade`` backs an
  existing embedded database up first; PostgreSQL goes through ``pg_dump`` and ``pg_restore``.
- ``workcoord dev``'s ``/metrics`` shows the whole process after a scripted workload.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from websockets.sync.client import connect as ws_connect

from tests.support.databases import xdist_worker
from tests.support.processes import free_port, service_env, workcoord_command
from tests.support.rest import ok, run_identity
from workcoord.coordinator.storage.migrate import head, known_revisions, upgrade

from .harness import create_database, drop_database
from .test_dev import READY_LINE, DevProcess, announced_token

pytestmark = [pytest.mark.e2e]

# A hang guard: a command that starts `workcoord dev` (imports, a first migration) can take
# minutes on a loaded 2-core machine before it even reaches what the test checks.
CLI_TIMEOUT_SECONDS = 600.0


def cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``workcoord ARGS`` with only ``env`` as workcoord configuration."""
    return subprocess.run(
        [*workcoord_command(), *args],
        env=service_env(**env),
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_SECONDS,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def one_line_failure(result: subprocess.CompletedProcess[str]) -> str:
    """The single stderr line of a command that failed to start (exit 1)."""
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


@contextlib.contextmanager
def listening(host: str = "127.0.0.1") -> Iterator[int]:
    """A port some other program listens on."""
    with socket.socket() as other:
        other.bind((host, 0))
        other.listen(1)
        yield int(other.getsockname()[1])


def sqlite_url(folder: Path) -> str:
    return f"sqlite+aiosqlite:///{folder / 'workcoord.db'}"


@pytest.fixture
def migrated_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "state"
    folder.mkdir(mode=0o700)
    upgrade(sqlite_url(folder))
    return folder


# --------------------------------------------------------------------------- failing loudly


def test_a_busy_port_stops_every_service_with_one_line(migrated_folder: Path) -> None:
    database = {"DATABASE_URL": sqlite_url(migrated_folder)}
    key = {"WORKCOORD_SERVICE_KEY": "wcsvc_" + "k" * 43}
    with listening() as port:
        taken = f"127.0.0.1:{port}"
        cases = {
            "coordinator": (database | {"WORKCOORD_LISTEN_COORDINATOR": taken}, "coordinator gRPC"),
            "recovery": (key | {"WORKCOORD_LISTEN_RECOVERY": taken}, "recovery gRPC"),
            "gateway": ({"WORKCOORD_LISTEN_GATEWAY": taken}, "gateway HTTP"),
        }
        for service, (env, what) in cases.items():
            line = one_line_failure(cli("serve", service, **env))
            assert line == (
                f"error: workcoord serve {service}: cannot listen on {taken} ({what}): "
                "the address is already in use"
            ), line
        # The metrics port too (checked before the service binds anything).
        free = f"127.0.0.1:{free_port()}"
        line = one_line_failure(
            cli(
                "serve",
                "gateway",
                WORKCOORD_LISTEN_GATEWAY=free,
                WORKCOORD_METRICS_PORT=str(port),
            )
        )
        assert f"cannot listen on 0.0.0.0:{port} (gateway metrics)" in line
        assert "already in use" in line


def test_a_busy_port_stops_dev_with_one_line(tmp_path: Path) -> None:
    with listening() as port:
        for flag in ("--coordinator-port", "--gateway-port", "--recovery-port"):
            ports = {
                "--coordinator-port": str(free_port()),
                "--recovery-port": str(free_port()),
                "--gateway-port": str(free_port()),
                flag: str(port),
            }
            args = [arg for pair in ports.items() for arg in pair]
            result = cli("dev", "--state-dir", str(tmp_path / "state"), *args)
            assert result.returncode == 1, result.stdout + result.stderr
            errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
            assert len(errors) == 1 and f"127.0.0.1:{port}" in errors[0], result.stderr
            assert "already in use" in errors[0] and "Traceback" not in result.stderr


def test_an_unmigrated_database_is_one_line_naming_the_command(tmp_path: Path) -> None:
    line = one_line_failure(
        cli(
            "serve",
            "coordinator",
            DATABASE_URL=sqlite_url(tmp_path),
            WORKCOORD_LISTEN_COORDINATOR=f"127.0.0.1:{free_port()}",
        )
    )
    assert line == (
        "error: workcoord serve coordinator: the database has no workcoord schema: "
        "run `workcoord db upgrade`"
    )


def _a_later_releases_schema(folder: Path, floor: str) -> None:
    """The folder's database as a later release leaves it (simulated: revision 9001, which
    admits code from ``floor`` on)."""
    with contextlib.closing(sqlite3.connect(folder / "workcoord.db")) as conn, conn:
        conn.execute("UPDATE alembic_version SET version_num = '9001'")
        conn.execute("INSERT INTO workcoord_schema_compatibility VALUES ('9001', ?)", (floor,))


def test_a_newer_schema_that_refuses_this_release_is_one_line_everywhere(
    migrated_folder: Path,
) -> None:
    _a_later_releases_schema(migrated_folder, "9000")
    refusal = (
        f"the database schema 9001 is newer than this release (head {head()}) and needs code "
        "from revision 9000 on: deploy that release or a newer one"
    )
    dev = cli(
        "dev",
        "--state-dir",
        str(migrated_folder),
        *("--coordinator-port", str(free_port()), "--recovery-port", str(free_port())),
        *("--gateway-port", str(free_port())),
    )
    assert dev.returncode == 1, dev.stdout + dev.stderr
    assert "Traceback" not in dev.stderr
    errors = [line for line in dev.stderr.splitlines() if line.startswith("error:")]
    assert errors == [f"error: workcoord dev: {refusal}"], dev.stderr
    upgrade = cli("db", "upgrade", "--state-dir", str(migrated_folder))
    assert one_line_failure(upgrade) == f"error: db upgrade: {refusal}"
    serve = cli(
        "serve",
        "coordinator",
        DATABASE_URL=sqlite_url(migrated_folder),
        WORKCOORD_LISTEN_COORDINATOR=f"127.0.0.1:{free_port()}",
    )
    assert one_line_failure(serve) == f"error: workcoord serve coordinator: {refusal}"
    assert not (migrated_folder / "backups").exists()  # nothing was migrated, nothing saved


def test_dev_runs_on_a_newer_schema_that_admits_this_release(migrated_folder: Path) -> None:
    _a_later_releases_schema(migrated_folder, head())
    dev = DevProcess(
        state_dir=migrated_folder,
        coordinator_port=free_port(),
        recovery_port=free_port(),
        gateway_port=free_port(),
    )
    try:
        dev.start()
        dev.wait_for_line(READY_LINE)
        notes = [line for line in dev.lines if "newer than this release" in line]
        assert notes and "schema 9001" in notes[0] and f"(head {head()})" in notes[0], notes
        assert "admits it: nothing to upgrade" in notes[0]
        assert dev.interrupt() == 0, dev.output()
    finally:
        dev.kill()
    assert "Traceback" not in dev.output(), dev.output()
    with contextlib.closing(sqlite3.connect(migrated_folder / "workcoord.db")) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchone() == ("9001",)
    assert not (migrated_folder / "backups").exists()


# --------------------------------------------------------------------------- backups


def test_upgrade_backs_an_embedded_database_up_first(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    folder.mkdir(mode=0o700)
    previous = known_revisions()[-2]
    upgrade(sqlite_url(folder), previous)
    result = cli("db", "upgrade", "--state-dir", str(folder))
    assert result.returncode == 0, result.stderr
    match = re.search(r"^backed up the database to (\S+)$", result.stdout, re.MULTILINE)
    assert match, result.stdout
    saved = Path(match.group(1))
    assert saved.parent == folder / "backups" and f"pre-upgrade-{previous}" in saved.name
    assert saved.stat().st_mode & 0o777 == 0o600
    with contextlib.closing(sqlite3.connect(saved)) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchone() == (previous,)
    assert f"database at revision {head()}" in result.stdout
    # Nothing to migrate, nothing to back up.
    again = cli("db", "upgrade", "--state-dir", str(folder))
    assert again.returncode == 0 and "backed up" not in again.stdout


def test_backup_and_restore_round_trip_the_embedded_database(tmp_path: Path) -> None:
    dev = DevProcess(
        state_dir=tmp_path / "state",
        coordinator_port=free_port(),
        recovery_port=free_port(),
        gateway_port=free_port(),
    )
    backup = tmp_path / "kept.db"
    try:
        dev.start()
        dev.wait_for_line(READY_LINE)
        token = announced_token(dev.output())
        admin = httpx.Client(
            base_url=dev.gateway_url, headers={"Authorization": f"Bearer {token}"}, timeout=30.0
        )
        with admin:
            ok(admin.post("/v1/orgs", json={"slug": "kept", "displayName": "Kept"}))
            # Online: the server keeps running while the snapshot is taken.
            taken = cli("db", "backup", "--state-dir", str(dev.state_dir), "--output", str(backup))
            assert taken.returncode == 0, taken.stderr
            assert backup.stat().st_mode & 0o777 == 0o600
            ok(admin.post("/v1/orgs", json={"slug": "later", "displayName": "Later"}))

            # Never over a running server, never a second server on the same folder.
            refused = one_line_failure(
                cli("db", "restore", "--state-dir", str(dev.state_dir), str(backup))
            )
            assert "is in use by process" in refused and "stop it first" in refused
            second = cli(
                "dev",
                "--state-dir",
                str(dev.state_dir),
                "--coordinator-port",
                str(free_port()),
                "--recovery-port",
                str(free_port()),
                "--gateway-port",
                str(free_port()),
            )
            assert second.returncode == 1 and "is in use by process" in second.stderr
            again = cli("db", "backup", "--state-dir", str(dev.state_dir), "--output", str(backup))
            assert again.returncode == 1 and "already exists" in again.stderr
        assert dev.interrupt() == 0, dev.output()

        restored = cli("db", "restore", "--state-dir", str(dev.state_dir), str(backup))
        assert restored.returncode == 0, restored.stderr
        assert f"schema revision {head()}" in restored.stdout
        assert "platform switch" in restored.stdout
        kept_aside = re.search(r"kept the replaced database in (\S+)", restored.stdout)
        assert kept_aside and Path(kept_aside.group(1)).is_file()

        dev.start()
        dev.wait_for_line(READY_LINE)
        with httpx.Client(
            base_url=dev.gateway_url, headers={"Authorization": f"Bearer {token}"}, timeout=30.0
        ) as admin:
            slugs = {org["slug"] for org in ok(admin.get("/v1/orgs"))["orgs"]}
        assert "kept" in slugs and "later" not in slugs
        assert dev.interrupt() == 0, dev.output()
    finally:
        dev.kill()


def test_postgres_backup_is_a_pg_dump_archive_that_pg_restore_brings_back(
    tmp_path: Path,
) -> None:
    source_name = f"workcoord_bk_{xdist_worker()}_{os.getpid()}"
    target_name = f"{source_name}_restored"
    source = create_database(source_name)
    target = create_database(target_name)
    try:
        assert cli("db", "upgrade", "--database-url", source).returncode == 0
        archive = tmp_path / "workcoord.dump"
        taken = cli("db", "backup", "--output", str(archive), DATABASE_URL=source)
        assert taken.returncode == 0, taken.stderr
        assert archive.stat().st_mode & 0o777 == 0o600
        assert archive.read_bytes().startswith(b"PGDMP")  # pg_dump's custom format
        # The runbook's restore drill: pg_restore into an empty database, then check it.
        plain = re.sub(r"^postgresql\+asyncpg://", "postgresql://", target)
        restored = subprocess.run(
            ["pg_restore", "--no-owner", "--exit-on-error", f"--dbname={plain}", str(archive)],
            capture_output=True,
            text=True,
            timeout=CLI_TIMEOUT_SECONDS,
            check=False,
        )
        assert restored.returncode == 0, restored.stderr
        current = cli("db", "current", "--database-url", target)
        assert current.stdout.strip() == head()

        # Without pg_dump: one clear line, no archive left behind.
        no_tools = tmp_path / "bin"
        no_tools.mkdir()
        missing = cli(
            "db",
            "backup",
            "--output",
            str(tmp_path / "never.dump"),
            DATABASE_URL=source,
            PATH=str(no_tools),
        )
        line = one_line_failure(missing)
        assert "pg_dump is not installed" in line
        assert not (tmp_path / "never.dump").exists()
    finally:
        drop_database(source_name)
        drop_database(target_name)


# --------------------------------------------------------------------------- metrics


def _metrics(client: httpx.Client) -> dict[str, float]:
    samples: dict[str, float] = {}
    for line in client.get("/metrics").text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            samples[name] = float(value)
    return samples


def _wait_metrics(
    client: httpx.Client, expected: dict[str, float], limit: float = 120.0
) -> dict[str, float]:
    """Scrape until every expected sample has its value (the queue is sampled every second)."""
    deadline = time.monotonic() + limit
    while True:
        samples = _metrics(client)
        wrong = {k: samples.get(k) for k, v in expected.items() if samples.get(k) != v}
        if not wrong:
            return samples
        assert time.monotonic() < deadline, f"not as expected: {wrong}"
        time.sleep(0.2)


def test_dev_metrics_show_the_whole_process_after_a_workload(tmp_path: Path) -> None:
    dev = DevProcess(
        state_dir=tmp_path / "state",
        coordinator_port=free_port(),
        recovery_port=free_port(),
        gateway_port=free_port(),
        env={"WORKCOORD_METRICS_SAMPLE_SECONDS": "1"},
    )
    try:
        dev.start()
        dev.wait_for_line(READY_LINE)
        # Start-up speaks for workcoord only: no library narrates its work at INFO.
        loggers = re.findall(r"^\S+ \S+ [A-Z]+ (\S+) ", dev.output(), re.MULTILINE)
        assert loggers and all(name.startswith("workcoord.") for name in loggers), dev.output()
        _run_workload(dev, announced_token(dev.output()))
        assert dev.interrupt() == 0, dev.output()
    finally:
        dev.kill()


def _run_workload(dev: DevProcess, token: str) -> None:
    admin = httpx.Client(
        base_url=dev.gateway_url, headers={"Authorization": f"Bearer {token}"}, timeout=30.0
    )
    with admin:
        ok(admin.post("/v1/orgs", json={"slug": "metered", "displayName": "Metered"}))
        cid = ok(
            admin.post(
                "/v1/work-coordinators",
                json={
                    "scope": "ORG",
                    "digestOwner": "ops@acme.test",
                    "orgSlug": "metered",
                    "displayName": "Metered",
                },
            )
        )["coordinatorId"]
        base = f"/v1/work-coordinators/{cid}"
        ok(
            admin.post(
                f"{base}/lanes",
                json={
                    "title": "three machine tasks",
                    "template": "CUSTOM",
                    "items": [
                        {"key": key, "kind": "TASK", "workerClass": "machine"}
                        for key in ("a", "b", "c")
                    ],
                },
            )
        )
        labels = f'{{coordinator="{cid}",worker_class="machine"}}'
        _wait_metrics(
            admin,
            {
                f"workcoord_queue_depth{labels}": 3.0,
                f"workcoord_capacity_in_use{labels}": 0.0,
                f"workcoord_capacity_limit{labels}": 2.0,  # the default machine capacity
            },
        )
        leases = ok(
            admin.post(
                f"{base}/leases",
                json={
                    "workerId": "metered-1",
                    "workerClass": "machine",
                    "maxItems": 3,
                    "leaseSeconds": 60,
                    "runIdentity": run_identity(),
                },
            )
        )["leases"]
        assert len(leases) == 2  # capacity 2
        _wait_metrics(
            admin,
            {f"workcoord_queue_depth{labels}": 1.0, f"workcoord_capacity_in_use{labels}": 2.0},
        )
        done, failed = leases
        ok(
            admin.post(
                f"{base}/leases/{done['leaseId']}/complete",
                json={"leaseToken": done["leaseToken"], "evidence": {"summary": "ok"}},
            )
        )
        ok(
            admin.post(
                f"{base}/leases/{failed['leaseId']}/fail",
                json={
                    "leaseToken": failed["leaseToken"],
                    "error": {"message": "broken", "retryable": False},
                },
            )
        )
        with ws_connect(
            f"ws://127.0.0.1:{dev.gateway_port}{base}/ws",
            additional_headers={"Authorization": f"Bearer {token}"},
            open_timeout=30,
        ) as feed:
            assert '"hello"' in str(feed.recv(timeout=30))
            # A change while subscribed reaches the feed as a delta, and its lag is measured.
            ok(
                admin.post(
                    f"{base}/lanes",
                    json={
                        "title": "one more",
                        "template": "CUSTOM",
                        "items": [{"key": "x", "kind": "TASK", "workerClass": "person"}],
                    },
                )
            )
            while '"delta"' not in str(feed.recv(timeout=30)):
                pass
            samples = _wait_metrics(
                admin,
                {
                    f"workcoord_capacity_in_use{labels}": 0.0,
                    'workcoord_attempts_total{outcome="completed",worker_class="machine"}': 1.0,
                    'workcoord_attempts_total{outcome="failed",worker_class="machine"}': 1.0,
                    "workcoord_feed_subscribers": 1.0,
                    "workcoord_gateway_feed_subscribers": 1.0,
                    "workcoord_recovery_leader": 1.0,
                },
            )
        _wait_metrics(admin, {"workcoord_feed_subscribers": 0.0})
    assert samples["workcoord_feed_lag_seconds_count"] >= 1.0
    assert samples['workcoord_events_total{type="ITEM_SUCCEEDED"}'] == 1.0
    assert samples['workcoord_events_total{type="ITEM_LEASED"}'] == 2.0
    lease_rpc = (
        'workcoord_rpc_duration_seconds_count{method="/workcoord.api.v1.WorkerService/Lease"}'
    )
    assert samples[lease_rpc] == 1.0
    assert samples["workcoord_recovery_pass_duration_seconds_count"] >= 1.0
    assert samples['workcoord_recovery_passes_total{outcome="failed"}'] == 0.0
    assert "workcoord_db_pool_connections_in_use" in samples
    # Gateway requests are counted by route template (bounded), never by raw path.
    assert not any(cid in name for name in samples if name.startswith("workcoord_gateway_"))
