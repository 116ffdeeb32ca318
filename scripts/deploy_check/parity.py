"""The Helm chart renders what the Kustomize overlays render: the same kinds and names of
objects (Namespaces aside: Helm installs into one), the same variables in every container, and
the same alert rules and dashboards. Values may differ (labels, a ConfigMap's hash suffix)."""

from __future__ import annotations

from .common import Doc, configmaps, generated_name, name_of, pod_spec, workloads
from .schemas import dashboards


def object_names(docs: list[Doc]) -> set[tuple[str, str]]:
    """(kind, name) of every object but Namespaces; generated ConfigMaps without their hash."""
    return {
        (d["kind"], generated_name(name_of(d)) if d["kind"] == "ConfigMap" else name_of(d))
        for d in docs
        if d["kind"] != "Namespace"
    }


def env_names(docs: list[Doc]) -> dict[str, set[str]]:
    """The variables each container gets (``env`` and its ConfigMaps), by workload/container."""
    maps = configmaps(docs)
    found: dict[str, set[str]] = {}
    for doc in workloads(docs):
        for container in pod_spec(doc)["containers"]:
            names = {entry["name"] for entry in container.get("env", [])}
            for ref in container.get("envFrom", []):
                name = ref.get("configMapRef", {}).get("name")
                names.update((maps.get(name) or {}).get("data", {}))
            found[f"{doc['kind']}/{name_of(doc)}/{container['name']}"] = names
    return found


def _rules(docs: list[Doc]) -> list[Doc]:
    return [d["spec"] for d in docs if d["kind"] == "PrometheusRule"]


def check_parity(
    chart: list[Doc], overlay: list[Doc], chart_label: str, overlay_label: str
) -> list[str]:
    """What the chart's rendering has that the overlay's has not, and the other way round."""
    where = f"{chart_label} vs {overlay_label}"
    problems = []
    ours, theirs = object_names(chart), object_names(overlay)
    for kind, name in sorted(ours - theirs):
        problems.append(f"{where}: only the chart renders {kind}/{name}")
    for kind, name in sorted(theirs - ours):
        problems.append(f"{where}: only the overlay renders {kind}/{name}")
    chart_env, overlay_env = env_names(chart), env_names(overlay)
    for container in sorted(chart_env.keys() & overlay_env.keys()):
        extra = sorted(chart_env[container] - overlay_env[container])
        missing = sorted(overlay_env[container] - chart_env[container])
        if extra or missing:
            problems.append(
                f"{where}: {container}: variables only in the chart {extra}, "
                f"only in the overlay {missing}"
            )
    for container in sorted(chart_env.keys() ^ overlay_env.keys()):
        problems.append(f"{where}: container {container} is not in both")
    if _rules(chart) != _rules(overlay):
        problems.append(f"{where}: the alert rules differ")
    if list(dashboards(chart).values()) != list(dashboards(overlay).values()):
        problems.append(f"{where}: the Grafana dashboards differ")
    return problems
