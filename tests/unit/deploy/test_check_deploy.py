"""scripts/check_deploy.py catches what broke the first manifests, and passes the committed ones.

Each case breaks a rendered manifest in memory the way a real mistake would and expects the
check to name it. Rendering needs kubectl (scripts/install-kubectl provides it in CI).
"""

from __future__ import annotations

import copy
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_deploy", ROOT / "scripts/check_deploy.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_deploy"] = module
    spec.loader.exec_module(module)
    return module


check = _load()
Doc = dict[str, Any]


@pytest.fixture(scope="module")
def production() -> list[Doc]:
    docs: list[Doc] = check.render(check.K8S / "overlays" / "production")
    return docs


def _all_problems(docs: list[Doc]) -> list[str]:
    dashboards = sorted((check.K8S / "overlays" / "production").rglob("*.json"))
    problems: list[str] = [
        *check.check_schemas(docs, "t"),
        *check.check_settings(docs, "t"),
        *check.check_ports(docs, "t"),
        *check.check_metric_names(docs, "t", dashboards),
    ]
    return problems


def _one(docs: list[Doc], kind: str, name_prefix: str) -> Doc:
    [found] = [
        d for d in docs if d["kind"] == kind and d["metadata"]["name"].startswith(name_prefix)
    ]
    return found


def _container(docs: list[Doc], deployment: str) -> Doc:
    container: Doc = _one(docs, "Deployment", deployment)["spec"]["template"]["spec"]["containers"][
        0
    ]
    return container


def test_the_committed_overlays_pass(production: list[Doc]) -> None:
    assert _all_problems(production) == []
    staging = check.render(check.K8S / "overlays" / "staging")
    assert _all_problems(staging) == []


def _listen_host_only(docs: list[Doc]) -> None:
    data = _one(docs, "ConfigMap", "workcoord-config")["data"]
    del data["WORKCOORD_LISTEN_COORDINATOR"]
    data["WORKCOORD_LISTEN_HOST"] = "0.0.0.0"


def _loopback(docs: list[Doc]) -> None:
    _one(docs, "ConfigMap", "workcoord-config")["data"]["WORKCOORD_LISTEN_GATEWAY"] = (
        "127.0.0.1:8080"
    )


def _redis_on_recovery(docs: list[Doc]) -> None:
    _container(docs, "workcoord-recovery")["env"].append({"name": "REDIS_URL", "value": "x"})


def _misspelled_field(docs: list[Doc]) -> None:
    container = _container(docs, "workcoord-gateway")
    container["readinesProbe"] = container.pop("readinessProbe")


def _probe_on_undeclared_port(docs: list[Doc]) -> None:
    _container(docs, "workcoord-coordinator")["readinessProbe"] = {"grpc": {"port": 50099}}


def _alert_on_missing_metric(docs: list[Doc]) -> None:
    rules = _one(docs, "PrometheusRule", "workcoord")["spec"]["groups"][0]["rules"]
    rules[0]["expr"] = "workcoord_recovery_leaders == 0"


def _monitor_wrong_port(docs: list[Doc]) -> None:
    _one(docs, "ServiceMonitor", "workcoord")["spec"]["endpoints"][0]["port"] = "prometheus"


@pytest.mark.parametrize(
    ("breakage", "expected"),
    [
        (_listen_host_only, "WORKCOORD_LISTEN_HOST is read by no service"),
        (_listen_host_only, "WORKCOORD_LISTEN_COORDINATOR is not set"),
        (_loopback, "listens on 127.0.0.1:8080, not on all interfaces"),
        (_redis_on_recovery, "sets REDIS_URL, which `serve recovery` never reads"),
        (_misspelled_field, "readinesProbe"),
        (_probe_on_undeclared_port, "readinessProbe probes port 50099"),
        (_alert_on_missing_metric, "no metric named workcoord_recovery_leaders"),
        (_monitor_wrong_port, "have no port named 'prometheus'"),
    ],
)
def test_a_broken_manifest_is_named(
    production: list[Doc], breakage: Callable[[list[Doc]], None], expected: str
) -> None:
    docs = copy.deepcopy(production)
    breakage(docs)
    problems = _all_problems(docs)
    assert any(expected in problem for problem in problems), problems
