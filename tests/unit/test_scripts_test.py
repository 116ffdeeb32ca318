"""``scripts/test`` runs the unit tests with no PostgreSQL or Redis to be had: asked to
(``--unit``), or, on a developer's machine, falling back loudly when the services cannot be
reached; CI instead fails. The services here point at TEST-NET-1 (192.0.2.1, RFC 5737: never
this machine), so ``ensure-services`` only checks them and starts nothing, and no database is
touched. (That a run never drops a database it did not create is
``tests/integration/test_test_databases.py``.)"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[2]
# One small unit module, on one process: the run is about the script, not the suite.
_SELECT = ("-q", "-p", "no:cacheprovider", "-k", "test_clock")


def _scripts_test(*argv: str, ci: bool) -> subprocess.CompletedProcess[str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("CI", "WORKCOORD_TEST_UNIT_ONLY", "PYTEST_XDIST_WORKER", "PYTEST_ADDOPTS")
    }
    env.update(
        WORKCOORD_TEST_DATABASE_URL="postgresql+asyncpg://postgres@192.0.2.1:5432/postgres",
        WORKCOORD_TEST_REDIS_URL="redis://192.0.2.1:6379/15",
        WORKCOORD_SERVICES_WAIT_SECONDS="1",
        WORKCOORD_TEST_WORKERS="0",
    )
    if ci:
        env["CI"] = "true"
    return subprocess.run(
        [str(_ROOT / "scripts" / "test"), *argv, *_SELECT],
        cwd=_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,  # only ends a hang
        check=False,
    )


def test_unit_only_needs_no_services_even_in_ci() -> None:
    done = _scripts_test("--unit", ci=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "unit tests only" in done.stderr
    assert "ensure-services" not in done.stderr  # the services were never even checked
    assert " passed" in done.stdout


def test_a_developer_without_services_falls_back_to_the_unit_tests_loudly() -> None:
    done = _scripts_test(ci=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "FALLING BACK TO THE UNIT TESTS ONLY" in done.stderr
    assert "integration and e2e tests are NOT run" in done.stderr
    assert " passed" in done.stdout


def test_ci_without_services_fails_instead_of_running_less() -> None:
    done = _scripts_test(ci=True)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "CI runs everything: failing" in done.stderr
    assert " passed" not in done.stdout
