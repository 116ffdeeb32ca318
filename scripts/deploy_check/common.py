"""What every part of the deploy check shares: paths, the document type, small accessors."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
CHART = ROOT / "deploy" / "helm" / "workcoord"
TOOLS = ROOT / ".build" / "tools"
KUBERNETES_VERSION = "1.30"  # the oldest version the manifests target (native gRPC probes: 1.27)
# What a pod of each component runs, in the order the check starts them.
START_ORDER = ("coordinator", "recovery", "gateway")

Doc = dict[str, Any]


class CheckFailed(Exception):
    """One line saying what is wrong."""


def name_of(doc: Doc) -> str:
    """The object's ``metadata.name``."""
    return str(doc["metadata"]["name"])


def component_of(doc: Doc) -> str:
    """The ``app.kubernetes.io/component`` label of the object's pods (or of the object)."""
    template = (doc.get("spec") or {}).get("template") or {}
    labels = (template.get("metadata") or doc["metadata"]).get("labels") or {}
    return str(labels.get("app.kubernetes.io/component", ""))


def pod_spec(doc: Doc) -> Doc:
    """The pod template's spec of a Deployment or Job."""
    return dict(doc["spec"]["template"]["spec"])


def workloads(docs: list[Doc]) -> list[Doc]:
    """The Deployments and Jobs."""
    return [d for d in docs if d["kind"] in ("Deployment", "Job")]


def configmaps(docs: list[Doc]) -> dict[str, Doc]:
    """The ConfigMaps by name."""
    return {name_of(d): d for d in docs if d["kind"] == "ConfigMap"}


def container_env(container: Doc, maps: dict[str, Doc]) -> dict[str, Any]:
    """Literal values only (secret references as their dicts), envFrom first, env over it."""
    env: dict[str, Any] = {}
    for source_ref in container.get("envFrom", []):
        ref = source_ref.get("configMapRef", {}).get("name")
        if ref in maps:
            env.update(maps[ref].get("data", {}))
    for entry in container.get("env", []):
        env[entry["name"]] = entry.get("value", entry.get("valueFrom"))
    return env


def probe_port(probe: Doc) -> Any:
    """The port a probe names (a number or a port name)."""
    handler = probe.get("grpc") or probe.get("httpGet") or probe.get("tcpSocket") or {}
    return handler.get("port")


def selected(service: Doc, docs: list[Doc]) -> list[Doc]:
    """The Deployments whose pods a Service selects."""
    wanted = service["spec"]["selector"].items()
    return [
        d
        for d in docs
        if d["kind"] == "Deployment"
        and wanted <= d["spec"]["template"]["metadata"]["labels"].items()
    ]


def generated_name(name: str) -> str:
    """A Kustomize-generated ConfigMap's name without its content hash suffix."""
    return re.sub(r"-[a-z0-9]{10}$", "", name)
