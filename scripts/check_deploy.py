"""Static checks of the Kubernetes manifests in ``deploy/k8s`` (no cluster needed).

Usage: ``uv run python scripts/check_deploy.py``

Every YAML file must parse; every file a kustomization lists must exist; every Deployment
container must have readiness and liveness probes and resource requests. When ``kubectl`` is
installed, ``kubectl kustomize`` also renders the base and each overlay, and the rendered
documents go through the same checks.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
K8S = ROOT / "deploy" / "k8s"


def _documents(text: str, source: str) -> list[dict[str, Any]]:
    documents = []
    for document in yaml.safe_load_all(text):
        if document is None:
            continue
        if not isinstance(document, dict):
            raise ValueError(f"{source}: a document is not a mapping")
        documents.append(document)
    return documents


def _check_kustomization(path: Path, document: dict[str, Any]) -> list[str]:
    problems = []
    for entry in document.get("resources", []):
        if not (path.parent / entry).exists():
            problems.append(f"{path.relative_to(ROOT)}: resource {entry!r} does not exist")
    return problems


def _check_workload(source: str, document: dict[str, Any]) -> list[str]:
    problems = []
    kind, name = document.get("kind"), document.get("metadata", {}).get("name")
    if not kind or not name or "apiVersion" not in document:
        return [f"{source}: a document lacks apiVersion, kind or metadata.name"]
    if kind != "Deployment":
        return []
    for container in document["spec"]["template"]["spec"]["containers"]:
        for field in ("readinessProbe", "livenessProbe"):
            if field not in container:
                problems.append(f"{source}: {name}/{container['name']} has no {field}")
        if not container.get("resources", {}).get("requests"):
            problems.append(f"{source}: {name}/{container['name']} has no resource requests")
    return problems


def main() -> int:
    problems: list[str] = []
    files = sorted(K8S.rglob("*.yaml"))
    for path in files:
        source = str(path.relative_to(ROOT))
        documents = _documents(path.read_text(), source)
        for document in documents:
            if path.name == "kustomization.yaml":
                problems += _check_kustomization(path, document)
            else:
                problems += _check_workload(source, document)
    print(f"check_deploy: {len(files)} YAML files parsed")

    kubectl = shutil.which("kubectl")
    if kubectl is None:
        print("check_deploy: kubectl not found; rendering with kustomize skipped")
    else:
        targets = [K8S / "base", *sorted((K8S / "overlays").iterdir())]
        for target in targets:
            source = f"kustomize {target.relative_to(ROOT)}"
            result = subprocess.run(  # noqa: S603
                [kubectl, "kustomize", str(target)], capture_output=True, text=True, check=False
            )
            if result.returncode != 0:
                problems.append(f"{source}: {result.stderr.strip()}")
                continue
            rendered = _documents(result.stdout, source)
            for document in rendered:
                problems += _check_workload(source, document)
            print(f"check_deploy: {source}: {len(rendered)} objects")

    for problem in problems:
        print(f"check_deploy: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
