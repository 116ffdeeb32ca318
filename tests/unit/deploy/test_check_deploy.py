"""The deploy check catches what broke the first manifests, and passes the committed ones.

Each case breaks a rendered manifest in memory the way a real mistake would and expects the
check to name it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

Doc = dict[str, Any]


def _all_problems(check: ModuleType, docs: list[Doc]) -> list[str]:
    source = check.render.Source("t", check.common.K8S)
    problems: list[str] = check.cli.check_source(source, docs)
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


@pytest.mark.parametrize("name", ["base", "staging", "production", "helm", "helm-production"])
def test_the_committed_sources_pass(
    check: ModuleType, rendered: dict[str, list[Doc]], name: str
) -> None:
    assert _all_problems(check, rendered[name]) == []


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


def _smtp_on_gateway(docs: list[Doc]) -> None:
    _container(docs, "workcoord-gateway")["env"].append(
        {"name": "WORKCOORD_SMTP_URL", "value": "x"}
    )


def _misspelled_field(docs: list[Doc]) -> None:
    container = _container(docs, "workcoord-gateway")
    container["readinesProbe"] = container.pop("readinessProbe")


def _probe_on_undeclared_port(docs: list[Doc]) -> None:
    _container(docs, "workcoord-coordinator")["readinessProbe"] = {"grpc": {"port": 50099}}


def _alert_on_missing_metric(docs: list[Doc]) -> None:
    rules = _one(docs, "PrometheusRule", "workcoord")["spec"]["groups"][0]["rules"]
    rules[0]["expr"] = "workcoord_recovery_leaders == 0"


def _dashboard_on_missing_metric(docs: list[Doc]) -> None:
    dashboard = _one(docs, "ConfigMap", "workcoord-grafana-dashboard")["data"]
    dashboard["workcoord.json"] = dashboard["workcoord.json"].replace(
        "workcoord_queue_depth", "workcoord_queue_size"
    )


def _monitor_wrong_port(docs: list[Doc]) -> None:
    _one(docs, "ServiceMonitor", "workcoord")["spec"]["endpoints"][0]["port"] = "prometheus"


def _annotations(docs: list[Doc]) -> dict[str, str]:
    annotations: dict[str, str] = _one(docs, "Ingress", "workcoord")["metadata"]["annotations"]
    return annotations


def _nginx_default_timeout(docs: list[Doc]) -> None:
    _annotations(docs)["nginx.ingress.kubernetes.io/proxy-read-timeout"] = "60"


def _no_send_timeout(docs: list[Doc]) -> None:
    del _annotations(docs)["nginx.ingress.kubernetes.io/proxy-send-timeout"]


def _ping_slower_than_the_timeout(docs: list[Doc]) -> None:
    data = _one(docs, "ConfigMap", "workcoord-config")["data"]
    data["WORKCOORD_FEED_PING_SECONDS"] = "300"


def _body_larger_than_the_gateways(docs: list[Doc]) -> None:
    _annotations(docs)["nginx.ingress.kubernetes.io/proxy-body-size"] = "8m"


def _gateway_limit_raised_alone(docs: list[Doc]) -> None:
    _one(docs, "ConfigMap", "workcoord-config")["data"]["WORKCOORD_MAX_BODY_BYTES"] = "4194304"


def _plain_http_to_a_tls_gateway(docs: list[Doc]) -> None:
    del _annotations(docs)["nginx.ingress.kubernetes.io/backend-protocol"]


def _buffered(docs: list[Doc]) -> None:
    del _annotations(docs)["nginx.ingress.kubernetes.io/proxy-buffering"]


def _mcp_not_routed(docs: list[Doc]) -> None:
    rule = _one(docs, "Ingress", "workcoord")["spec"]["rules"][0]
    rule["http"]["paths"][0]["path"] = "/v1"


def _routed_to_metrics(docs: list[Doc]) -> None:
    rule = _one(docs, "Ingress", "workcoord")["spec"]["rules"][0]
    rule["http"]["paths"][0]["backend"]["service"]["port"] = {"name": "metrics"}


def _host_without_tls(docs: list[Doc]) -> None:
    _one(docs, "Ingress", "workcoord")["spec"]["rules"][0]["host"] = "other.example.com"


def _rules(docs: list[Doc]) -> list[Doc]:
    rules: list[Doc] = _one(docs, "PrometheusRule", "workcoord")["spec"]["groups"][0]["rules"]
    return rules


def _bad_promql(docs: list[Doc]) -> None:
    _rules(docs)[0]["expr"] = 'sum(workcoord_recovery_leader{namespace="workcoord"}'


def _runbook_url_to_nowhere(docs: list[Doc]) -> None:
    _rules(docs)[-1]["annotations"]["runbook_url"] = "deploy/RUNBOOK.md#no-such-section"


def _no_runbook_url(docs: list[Doc]) -> None:
    del _rules(docs)[0]["annotations"]["runbook_url"]


BREAKAGES = [
    (_bad_promql, "promtool check rules"),
    (_runbook_url_to_nowhere, "has no heading for deploy/RUNBOOK.md#no-such-section"),
    (_no_runbook_url, "runbook_url must start with deploy/RUNBOOK.md#"),
    (_listen_host_only, "WORKCOORD_LISTEN_HOST is read by no service"),
    (_listen_host_only, "WORKCOORD_LISTEN_COORDINATOR is not set"),
    (_loopback, "listens on 127.0.0.1:8080, not on all interfaces"),
    (_redis_on_recovery, "sets REDIS_URL, which `serve recovery` never reads"),
    (_smtp_on_gateway, "sets WORKCOORD_SMTP_URL, which `serve gateway` never reads"),
    (_misspelled_field, "readinesProbe"),
    (_probe_on_undeclared_port, "readinessProbe probes port 50099"),
    (_alert_on_missing_metric, "no metric named workcoord_recovery_leaders"),
    (_dashboard_on_missing_metric, "no metric named workcoord_queue_size"),
    (_monitor_wrong_port, "have no port named 'prometheus'"),
    (_nginx_default_timeout, "proxy-read-timeout is '60': it must be at least 100 seconds"),
    (_no_send_timeout, "proxy-send-timeout is None"),
    (_ping_slower_than_the_timeout, "it must be at least 310 seconds"),
    (_body_larger_than_the_gateways, "proxy-body-size is '8m', not the gateway's 1048576"),
    (_gateway_limit_raised_alone, "not the gateway's 4194304"),
    (_plain_http_to_a_tls_gateway, "backend-protocol is HTTP, but the gateway serves HTTPS"),
    (_buffered, "proxy-buffering must be off"),
    (_mcp_not_routed, "/mcp is not routed"),
    (_routed_to_metrics, "goes to the metrics port"),
    (_host_without_tls, "host 'other.example.com' has no TLS entry"),
]


@pytest.mark.parametrize("name", ["production", "helm-production"])
@pytest.mark.parametrize(("breakage", "expected"), BREAKAGES)
def test_a_broken_manifest_is_named(
    check: ModuleType,
    rendered: dict[str, list[Doc]],
    name: str,
    breakage: Callable[[list[Doc]], None],
    expected: str,
) -> None:
    docs = copy.deepcopy(rendered[name])
    breakage(docs)
    problems = _all_problems(check, docs)
    assert any(expected in problem for problem in problems), problems


def test_the_ingress_timeout_covers_a_long_poll_and_the_feed_ping(
    check: ModuleType, rendered: dict[str, list[Doc]]
) -> None:
    # 30 s request timeout + the API's 60 s longest wait + 10 s margin; the ping is 15 s.
    assert check.config.required_proxy_timeout(rendered["production"]) == 100
    assert check.config.nginx_size("1m") == check.config.nginx_size("1048576") == 1 << 20
