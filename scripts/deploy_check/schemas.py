"""Every object against the Kubernetes OpenAPI schemas (offline, strict: unknown fields fail);
the Prometheus Operator objects against the fields they use here; and every metric an alert
rule or a Grafana dashboard names must be one the code exports."""

from __future__ import annotations

import functools
import json
import re

from .common import KUBERNETES_VERSION, Doc, name_of

PROMETHEUS_KINDS = ("ServiceMonitor", "PrometheusRule")


def check_schemas(docs: list[Doc], source: str) -> list[str]:
    """What kubernetes-validate (and the Prometheus checks below) find wrong."""
    problems = []
    for doc in docs:
        where = f"{source}: {doc.get('kind')}/{doc.get('metadata', {}).get('name')}"
        if doc.get("kind") in PROMETHEUS_KINDS:
            problems += [f"{where}: {p}" for p in _check_prometheus_object(doc, docs)]
            continue
        problem = _schema_problem(json.dumps(doc, sort_keys=True))
        if problem:
            problems.append(f"{where}: {problem}")
    return problems


@functools.lru_cache(maxsize=512)
def _schema_problem(document: str) -> str | None:
    """kubernetes-validate's verdict on one object (as JSON). Cached: it reads its schema files
    anew on every call, and the same objects come back in several sources and tests."""
    import kubernetes_validate  # type: ignore[import-untyped]

    try:
        kubernetes_validate.validate(json.loads(document), KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        return f"{'.'.join(str(p) for p in exc.path)}: {exc.message}"
    except kubernetes_validate.SchemaNotFoundError:
        return f"no schema for this kind in Kubernetes {KUBERNETES_VERSION}"
    return None


def _check_prometheus_object(doc: Doc, docs: list[Doc]) -> list[str]:
    spec = doc.get("spec") or {}
    if doc["apiVersion"] != "monitoring.coreos.com/v1":
        return [f"apiVersion must be monitoring.coreos.com/v1, not {doc['apiVersion']}"]
    if doc["kind"] == "ServiceMonitor":
        wanted = (spec.get("selector") or {}).get("matchLabels") or {}
        services = [
            d
            for d in docs
            if d["kind"] == "Service"
            and wanted.items() <= (d["metadata"].get("labels") or {}).items()
        ]
        if not services:
            return ["its selector matches no Service"]
        problems = []
        for endpoint in spec.get("endpoints") or []:
            port = endpoint.get("port")
            missing = [
                name_of(s)
                for s in services
                if port not in {p.get("name") for p in s["spec"]["ports"]}
            ]
            if missing:
                problems.append(f"Services {missing} have no port named {port!r}")
        return problems or ([] if spec.get("endpoints") else ["no endpoints"])
    problems = []
    for group in spec.get("groups") or []:
        for rule in group.get("rules") or []:
            name = rule.get("alert") or rule.get("record") or "?"
            unknown = set(rule) - {"alert", "record", "expr", "for", "labels", "annotations"}
            if unknown or "expr" not in rule:
                problems.append(f"rule {name}: unknown fields {sorted(unknown)} or no expr")
            if "alert" in rule and (rule.get("labels") or {}).get("severity") not in (
                "critical",
                "warning",
            ):
                problems.append(f"alert {name}: severity must be critical or warning")
            if "alert" in rule and not (rule.get("annotations") or {}).get("summary"):
                problems.append(f"alert {name}: no summary annotation")
    return problems


@functools.cache
def exported_metrics() -> frozenset[str]:
    """Every sample name the services can export (importing their metric modules)."""
    import importlib

    from prometheus_client import REGISTRY

    for module in (
        "workcoord.kit.metrics",
        "workcoord.coordinator.metrics",
        "workcoord.recovery.metrics",
        "workcoord.gateway.metrics",
    ):
        importlib.import_module(module)
    suffixes = {
        "counter": ("_total", "_created"),
        "histogram": ("_bucket", "_count", "_sum", "_created"),
        "summary": ("_count", "_sum", "_created"),
    }
    names = set()
    for family in REGISTRY.collect():
        names.add(family.name)
        names.update(family.name + suffix for suffix in suffixes.get(family.type, ()))
    return frozenset(names)


def dashboards(docs: list[Doc]) -> dict[str, Doc]:
    """The Grafana dashboards the rendered ConfigMaps carry (label ``grafana_dashboard``)."""
    found = {}
    for doc in docs:
        if doc["kind"] == "ConfigMap" and "grafana_dashboard" in (
            doc["metadata"].get("labels") or {}
        ):
            for key, text in (doc.get("data") or {}).items():
                found[f"{name_of(doc)}/{key}"] = json.loads(text)
    return found


def check_metric_names(docs: list[Doc], source: str) -> list[str]:
    """Alert rules and dashboard panels that name a metric no service exports."""
    expressions: list[tuple[str, str]] = []
    for doc in docs:
        if doc.get("kind") == "PrometheusRule":
            for group in doc["spec"]["groups"]:
                for rule in group["rules"]:
                    expressions.append((f"alert {rule.get('alert')}", rule["expr"]))
    for where, dashboard in dashboards(docs).items():
        for panel in dashboard["panels"]:
            for target in panel.get("targets", []):
                expressions.append((f"{where}: {panel['title']}", target["expr"]))
    known = exported_metrics()
    problems = []
    for where, expression in expressions:
        for name in sorted(set(re.findall(r"\bworkcoord_[a-z0-9_]+", expression))):
            if name not in known:
                problems.append(f"{source}: {where}: no metric named {name}")
    return problems
