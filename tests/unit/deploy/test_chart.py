"""The Helm chart: it lints, renders what the Kustomize overlays render (same objects, same
variables, same alerts and dashboard), and its values do what values.yaml says."""

from __future__ import annotations

import copy
from types import ModuleType
from typing import Any

import pytest

Doc = dict[str, Any]
PAIRS = [("helm", "base"), ("helm-production", "production")]


def _chart(check: ModuleType, *sets: str, release: str = "workcoord") -> Any:
    return check.render.Source("t", check.common.CHART, release=release, sets=sets)


def _kinds(docs: list[Doc]) -> set[str]:
    return {d["kind"] for d in docs}


@pytest.mark.parametrize("values", [None, "values-production.yaml"])
def test_the_chart_lints_strictly(check: ModuleType, values: str | None) -> None:
    chart = check.common.CHART
    check.render.Source("t", chart, chart / values if values else None).lint()


def test_the_check_pairs_each_rendering_of_the_chart_with_an_overlay(check: ModuleType) -> None:
    assert dict(PAIRS) == check.render.PARITY


@pytest.mark.parametrize(("chart", "overlay"), PAIRS)
def test_each_rendering_of_the_chart_matches_its_overlay(
    check: ModuleType, rendered: dict[str, list[Doc]], chart: str, overlay: str
) -> None:
    assert check.parity.check_parity(rendered[chart], rendered[overlay], chart, overlay) == []
    # Not vacuous: the production pair holds every kind the overlay has.
    names = check.parity.object_names(rendered[chart])
    assert names == check.parity.object_names(rendered[overlay])
    assert len(check.parity.env_names(rendered[chart])) == 4  # three services and the Job


def _drop_variable(docs: list[Doc]) -> None:
    [gateway] = [
        d for d in docs if d["metadata"]["name"] == "workcoord-gateway" and "template" in d["spec"]
    ]
    env = gateway["spec"]["template"]["spec"]["containers"][0]["env"]
    env[:] = [e for e in env if e["name"] != "WORKCOORD_PUBLIC_ORIGINS"]


def _drop_object(docs: list[Doc]) -> None:
    docs[:] = [d for d in docs if d["kind"] != "PodDisruptionBudget"]


def _change_an_alert(docs: list[Doc]) -> None:
    [rule] = [d for d in docs if d["kind"] == "PrometheusRule"]
    rule["spec"]["groups"][0]["rules"][0]["for"] = "30m"


def _change_the_dashboard(docs: list[Doc]) -> None:
    [board] = [d for d in docs if d["metadata"]["name"] == "workcoord-grafana-dashboard"]
    board["data"]["workcoord.json"] = board["data"]["workcoord.json"].replace("Queue", "Line", 1)


@pytest.mark.parametrize(
    ("breakage", "expected"),
    [
        (_drop_variable, "only in the overlay ['WORKCOORD_PUBLIC_ORIGINS']"),
        (_drop_object, "only the overlay renders PodDisruptionBudget/workcoord-gateway"),
        (_change_an_alert, "the alert rules differ"),
        (_change_the_dashboard, "the Grafana dashboards differ"),
    ],
)
def test_a_chart_that_drifts_from_the_overlay_is_named(
    check: ModuleType, rendered: dict[str, list[Doc]], breakage: Any, expected: str
) -> None:
    docs = copy.deepcopy(rendered["helm-production"])
    breakage(docs)
    problems = check.parity.check_parity(docs, rendered["production"], "chart", "overlay")
    assert any(expected in problem for problem in problems), problems


def test_the_image_name_and_tag_are_one_value_each(check: ModuleType) -> None:
    docs = _chart(check, "image.repository=registry.test/wc", "image.tag=9.9.9").render()
    images = {
        c["image"]
        for d in docs
        if d["kind"] in ("Deployment", "Job")
        for c in d["spec"]["template"]["spec"]["containers"]
    }
    assert images == {"registry.test/wc:9.9.9"}
    # Without a tag: the chart's appVersion, never `latest`.
    [default] = {
        c["image"]
        for d in _chart(check).render()
        if d["kind"] == "Deployment"
        for c in d["spec"]["template"]["spec"]["containers"]
    }
    assert default.endswith(":0.1.0")


def test_the_ingress_and_production_objects_are_off_by_default(
    rendered: dict[str, list[Doc]],
) -> None:
    optional = {
        "Ingress",
        "NetworkPolicy",
        "HorizontalPodAutoscaler",
        "ServiceMonitor",
        "PrometheusRule",
    }
    assert not _kinds(rendered["helm"]) & optional
    assert optional <= _kinds(rendered["helm-production"])


def test_the_migration_is_a_hook_that_needs_nothing_the_release_creates(
    rendered: dict[str, list[Doc]],
) -> None:
    [job] = [d for d in rendered["helm-production"] if d["kind"] == "Job"]
    annotations = job["metadata"]["annotations"]
    assert annotations["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert annotations["helm.sh/hook-delete-policy"] == "before-hook-creation"
    pod = job["spec"]["template"]["spec"]
    # A pre-install hook runs before the chart's ConfigMap and ServiceAccount exist.
    assert "serviceAccountName" not in pod
    assert all("envFrom" not in c for c in pod["containers"])


def test_scaling_and_resources_come_from_the_values(check: ModuleType) -> None:
    docs = _chart(
        check,
        "recovery.replicas=3",
        "gateway.resources.requests.cpu=2",
        "autoscaling.enabled=true",
        "autoscaling.maxReplicas=7",
    ).render()
    by_name = {(d["kind"], d["metadata"]["name"]): d for d in docs}
    assert by_name[("Deployment", "workcoord-recovery")]["spec"]["replicas"] == 3
    # An autoscaled Deployment carries no replica count (each apply would reset the HPA's).
    assert "replicas" not in by_name[("Deployment", "workcoord-gateway")]["spec"]
    gateway = by_name[("Deployment", "workcoord-gateway")]["spec"]["template"]["spec"]
    assert gateway["containers"][0]["resources"]["requests"]["cpu"] == 2
    assert by_name[("HorizontalPodAutoscaler", "workcoord-coordinator")]["spec"]["maxReplicas"] == 7


def test_another_release_name_renders_a_consistent_release(check: ModuleType) -> None:
    source = check.render.Source(
        "t", check.common.CHART, check.common.CHART / "values-production.yaml", release="blue"
    )
    docs = source.render()
    names = {d["metadata"]["name"] for d in docs}
    assert "blue-workcoord-coordinator" in names
    [config] = [
        d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-config")
    ]
    assert config["data"]["WORKCOORD_COORDINATOR_ADDRESS"] == "blue-workcoord-coordinator:50051"
    assert check.cli.check_source(source, docs) == []


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ("imagee.tag=1", "additional properties 'imagee' not allowed"),
        ("smtp.url=http://mail", "/smtp/url"),
        ("publicUrl=ftp://x", "/publicUrl"),
        ("webhooks.allow=example.com", "/webhooks"),
        ("tracing.exporter=jaeger", "/tracing/exporter"),
    ],
)
def test_the_values_schema_refuses_unknown_and_reserved_settings(
    check: ModuleType, setting: str, expected: str
) -> None:
    with pytest.raises(check.common.CheckFailed, match=expected):
        _chart(check, setting).render()
