"""Fixtures: a running workcoord (coordinator, recovery and gateway as separate processes).

See :mod:`.harness` for how the system is provisioned, clocked and stopped.
"""

from __future__ import annotations

import secrets
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.databases import redis_url, xdist_worker
from tests.support.processes import ServiceProcess, free_port, service_env

from .harness import System, create_database, drop_database, migrate_database
from .rest import Tenant, make_tenant


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call" and report.failed:
        item.stash[_FAILED] = True
    return report


_FAILED = pytest.StashKey[bool]()

# pytest-timeout's limit (a hang guard) for each end-to-end test, its fixtures' set-up included:
# some start `workcoord dev` or the services several times, and a loaded 2-core machine can take
# minutes for each start (imports, migrations). The suite's 300 s default is too tight for them.
E2E_TIMEOUT_SECONDS = 1800.0
_E2E_FOLDER = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(_E2E_FOLDER) and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(E2E_TIMEOUT_SECONDS))


@pytest.fixture(scope="session")
def system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[System]:
    """The three services running against a fresh PostgreSQL database."""
    directory = tmp_path_factory.mktemp("e2e-system")
    name = f"workcoord_e2e_{xdist_worker()}_{secrets.token_hex(4)}"
    database_url = create_database(name)
    try:
        yield from _run_system(directory, database_url)
    finally:
        drop_database(name)


def _run_system(directory: Path, database_url: str) -> Generator[System, None, None]:
    coordinator_address = f"127.0.0.1:{free_port()}"
    recovery_address = f"127.0.0.1:{free_port()}"
    gateway_address = f"127.0.0.1:{free_port()}"
    admin_token = "wcadm_" + secrets.token_urlsafe(32)
    service_key = "wcsvc_" + secrets.token_urlsafe(32)
    clock_file = directory / "clock-offset"
    clock_file.write_text("0\n")
    common = {
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url(),
        "WORKCOORD_BOOTSTRAP_ADMIN_TOKEN": admin_token,
        "WORKCOORD_SERVICE_KEY": service_key,
        "WORKCOORD_LISTEN_COORDINATOR": coordinator_address,
        "WORKCOORD_LISTEN_RECOVERY": recovery_address,
        "WORKCOORD_LISTEN_GATEWAY": gateway_address,
        "WORKCOORD_COORDINATOR_ADDRESS": coordinator_address,
        "WORKCOORD_RECOVERY_ADDRESS": recovery_address,
        "WORKCOORD_RECOVERY_INTERVAL_SECONDS": "3600",
        "WORKCOORD_LOG_LEVEL": "INFO",
        # The webhook tests post to receivers on the loopback.
        "WORKCOORD_WEBHOOK_ALLOWED_HOSTS": "127.0.0.1",
    }
    clocked = {**common, "WORKCOORD_TEST_CLOCK_FILE": str(clock_file)}

    def service(name: str, env: dict[str, str]) -> ServiceProcess:
        return ServiceProcess(
            name=name,
            args=["serve", name],
            env=service_env(**env),
            log_path=directory / f"{name}.log",
        )

    system = System(
        database_url=database_url,
        gateway_url=f"http://{gateway_address}",
        coordinator_address=coordinator_address,
        recovery_address=recovery_address,
        admin_token=admin_token,
        service_key=service_key,
        clock_file=clock_file,
        coordinator=service("coordinator", clocked),
        recovery=service("recovery", clocked),
        gateway=service("gateway", common),
    )
    try:
        # The gateway needs no database and connects lazily: it starts while the schema
        # migrates. Recovery takes leadership on its first tick, and with a one-hour interval
        # a tick that found no coordinator would leave it leaderless: it starts once the
        # coordinator serves.
        system.gateway.start()
        migrate_database(database_url)
        system.coordinator.start()
        system.wait_ready(only=(system.coordinator,))
        system.recovery.start()
        system.wait_ready()
        yield system
    finally:
        exits = system.stop_all()
        unclean = {name: code for name, code in exits.items() if code != 0}
        assert not unclean, f"unclean shutdown (exit codes {unclean})\n{system.logs()}"
        problems = system.log_problems()
        assert not problems, f"{problems}\n{system.logs()}"


@pytest.fixture(autouse=True)
def _print_logs_on_failure(request: pytest.FixtureRequest) -> Iterator[None]:
    """After a failed test that used the system, print the services' logs (pytest shows them)."""
    yield
    if request.node.stash.get(_FAILED, False) and "system" in request.fixturenames:
        running: System = request.getfixturevalue("system")
        print(running.logs())


@pytest.fixture
def tenant(system: System) -> Iterator[Tenant]:
    """A fresh org, ORG work coordinator and READ/LEASE/WRITE work key on the running system."""
    created = make_tenant(system)
    try:
        yield created
    finally:
        created.close()
