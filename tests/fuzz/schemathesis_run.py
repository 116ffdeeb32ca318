"""A bounded schemathesis run over ``/v1/openapi.json`` against a real system: no 5xx, and every
error a proper ``google.rpc.Status`` with an ``ErrorInfo``.

``scripts/fuzz-rest [--seconds N] [--examples N] [--seed N]`` (a section of ``.ci/run``) starts a
coordinator, the recovery service and a gateway as separate processes on a fresh PostgreSQL
database and a private Redis (the e2e harness), creates an org, a work coordinator and a work
key (READ, LEASE, WRITE on it), then runs the schemathesis CLI twice within the time budget:
with the work key, then with the platform admin token. ``coordinatorId`` and ``orgSlug`` are
pinned to the real ones so requests get past "not found" into the RPCs. Checks:
``not_a_server_error`` and ``google_rpc_status`` (:mod:`tests.fuzz.schemathesis_checks`).

It prints the figures (requests, statuses, 5xx, malformed errors, schema-valid requests refused
with 400 and where) and exits 1 when any check failed. Not a pytest test: the normal suite has
a smaller run of its own (``tests/e2e/test_rest_surface.py``); this one takes minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.feed_services import run_feed_system
from tests.fuzz.schemathesis_checks import SUMMARY_ENV
from tests.support.rest import bearer, ok

REPO = Path(__file__).resolve().parents[2]
# Not fuzzed: the WebSocket feed (schemathesis speaks plain HTTP) and the platform settings
# (the kill switch would stop every later request of the run).
_EXCLUDED_PATHS = r"/ws$|^/v1/settings$"

# Pinned parameters: the real coordinator and org, in paths and in the bodies that create in
# them (random ones only ever find "not found", never the code behind it; not in every body: an
# org in a PATCH body is a change the server refuses), an expiry a week ahead (keys, tokens and
# grants must expire in the future: random times are refused before anything else runs), the
# coordinator's switch left on (switched off, every later call would only answer
# COORDINATION_DISABLED), and no long-poll (a Lease waiting up to 60 s for work that never comes
# would spend the budget). A 501 or 503 must be a documented one (google_rpc_status checks).
_CONFIG = """\
[parameters]
"path.coordinatorId" = "{cid}"
"path.orgSlug" = "{org}"
"body.waitSeconds" = 0
"body.expireTime" = "{expire}"
"body.enabled" = true

[[operations]]
include-operation-id = "AdminService_CreateWorkKey"
parameters = {{ "body.coordinatorIds" = ["{cid}"], "body.orgSlug" = "{org}" }}

[[operations]]
include-operation-id = "WorkCoordinatorService_CreateWorkCoordinator"
parameters = {{ "body.orgSlug" = "{org}" }}

[checks.not_a_server_error]
expected-statuses = ["2xx", "3xx", "4xx", "501", "503"]
"""


@dataclass(frozen=True)
class Credential:
    name: str
    token: str
    seconds: int


def main(argv: list[str] | None = None) -> int:
    """Run the fuzz; 0 when schemathesis found nothing, 1 otherwise."""
    parser = argparse.ArgumentParser(prog="scripts/fuzz-rest", description=__doc__)
    parser.add_argument("--seconds", type=int, default=180, help="time budget of both runs")
    parser.add_argument("--examples", type=int, default=25, help="max examples per operation")
    parser.add_argument("--seed", type=int, default=None, help="schemathesis seed (random)")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else secrets.randbelow(2**32)
    with tempfile.TemporaryDirectory(prefix="workcoord-fuzz-") as folder:
        directory = Path(folder)
        with run_feed_system(directory, replicas=1, with_recovery=True) as system:
            url = system.gateway_urls[0]
            cid, org, key = _provision(url, system.admin_token)
            # The work key first: the admin's run may disable or reconfigure the coordinator.
            work_seconds = max(1, args.seconds * 2 // 5)
            credentials = [
                Credential("work key (READ, LEASE, WRITE)", key, work_seconds),
                Credential("platform admin", system.admin_token, args.seconds - work_seconds),
            ]
            config = directory / "schemathesis.toml"
            expire = (datetime.now(UTC) + timedelta(days=7)).strftime("%Y-%m-%dT%H:%M:%SZ")
            config.write_text(_CONFIG.format(cid=cid, org=org, expire=expire), encoding="utf-8")
            results = [
                _run(url, credential, config, directory, args.examples, seed)
                for credential in credentials
            ]
    failed = False
    print(f"\nschemathesis over /v1/openapi.json, seed {seed}, {args.examples} examples/op:")
    for credential, (exit_code, summary) in zip(credentials, results, strict=True):
        failed |= exit_code != 0
        _report(credential, exit_code, summary)
    total = sum(s.get("requests", 0) for _, s in results)
    errors = sum(sum(s.get("server_errors", {}).values()) for _, s in results)
    malformed = sum(len(s.get("malformed", [])) for _, s in results)
    print(f"total: {total} requests, {errors} 5xx, {malformed} malformed errors")
    print("fuzz-rest: " + ("FAILED" if failed else "OK"))
    return 1 if failed else 0


def _provision(url: str, admin: str) -> tuple[str, str, str]:
    """An org, a work coordinator in it and a work key on it: (coordinator id, org, secret)."""
    headers = bearer(admin)
    org = f"fuzz-{secrets.token_hex(4)}"
    with httpx.Client(base_url=url, headers=headers, timeout=30) as http:
        ok(http.post("/v1/orgs", json={"slug": org, "displayName": "Fuzz"}))
        wc = ok(
            http.post(
                "/v1/work-coordinators",
                json={
                    "scope": "ORG",
                    "digestOwner": "ops@acme.test",
                    "orgSlug": org,
                    "displayName": "fuzz",
                },
            )
        )
        cid = str(wc["coordinatorId"])
        key = ok(
            http.post(
                "/v1/work-keys",
                json={
                    "displayName": "fuzz",
                    "orgSlug": org,
                    "coordinatorIds": [cid],
                    "capabilities": ["READ", "LEASE", "WRITE"],
                },
            )
        )
    return cid, org, str(key["secret"])


def _run(
    url: str, credential: Credential, config: Path, directory: Path, examples: int, seed: int
) -> tuple[int, dict[str, Any]]:
    summary_path = directory / f"summary-{secrets.token_hex(4)}.json"
    env = {
        **os.environ,
        "SCHEMATHESIS_HOOKS": "tests.fuzz.schemathesis_checks",
        SUMMARY_ENV: str(summary_path),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    command = [
        *_schemathesis(),
        "--config-file",
        str(config),
        "run",
        f"{url}/v1/openapi.json",
        "--header",
        f"Authorization: Bearer {credential.token}",
        "--checks",
        "not_a_server_error,google_rpc_status",
        "--max-examples",
        str(examples),
        "--max-time",
        str(credential.seconds),
        "--phases",
        "examples,coverage,fuzzing",
        "--exclude-path-regex",
        _EXCLUDED_PATHS,
        "--seed",
        str(seed),
        "--workers",
        "1",
        "--request-timeout",
        "70",  # a Lease may long-poll for up to 60 s
        "--suppress-health-check",
        "all",
        "--continue-on-failure",
    ]
    print(f"\n---- schemathesis as the {credential.name}, {credential.seconds}s ----", flush=True)
    started = time.monotonic()
    # The CLI stops itself at --max-time; the timeout is only a hang guard. In the temporary
    # folder: the CLI keeps a cache (.schemathesis/) in its working directory.
    finished = subprocess.run(
        command, env=env, cwd=directory, check=False, timeout=credential.seconds + 600
    )
    print(f"({time.monotonic() - started:.0f}s)", flush=True)
    summary: dict[str, Any] = {}
    if summary_path.exists():
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
    return finished.returncode, summary


def _schemathesis() -> list[str]:
    script = Path(sys.executable).with_name("schemathesis")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "schemathesis.cli"]


def _report(credential: Credential, exit_code: int, summary: dict[str, Any]) -> None:
    statuses = ", ".join(f"{k}: {v}" for k, v in summary.get("statuses", {}).items())
    print(f"- as the {credential.name}: exit {exit_code}, {summary.get('requests', 0)} requests")
    print(f"  statuses {{{statuses}}}, modes {summary.get('modes', {})}")
    refused = summary.get("refused_positive", {})
    print(f"  schema-valid requests refused with 400: {sum(refused.values())}")
    for label, count in refused.items():
        print(f"    {count:4d} {label}")
    for label, count in summary.get("documented_5xx", {}).items():
        print(f"  documented {label}: {count}")
    for line, count in summary.get("server_errors", {}).items():
        print(f"  5xx {count:4d} x {line}")
    for line in summary.get("malformed", []):
        print(f"  malformed: {line}")


if __name__ == "__main__":
    sys.exit(main())
