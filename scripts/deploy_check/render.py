"""Rendering the sources: the Kustomize base and overlays (``kubectl kustomize``) and the Helm
chart with its default and production values (``helm lint``, ``helm template``)."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml  # type: ignore[import-untyped]

from .common import CHART, K8S, KUBERNETES_VERSION, ROOT, TOOLS, CheckFailed, Doc

# The release the chart is rendered as: named so that object names are the overlays' ones.
RELEASE = "workcoord"
NAMESPACE = "workcoord"
# Which overlay each rendering of the chart must match (kinds, names, variables).
PARITY = {"helm": "base", "helm-production": "production"}


def tool(name: str) -> str:
    """The path of ``kubectl`` or ``helm``: on PATH, else the copy ``scripts/install-NAME`` left."""
    found = shutil.which(name) or (str(TOOLS / name) if (TOOLS / name).is_file() else None)
    if found is None:
        raise CheckFailed(f"{name} not found: run scripts/install-{name} (or install {name})")
    return found


def _run(command: list[str], what: str) -> str:
    result = subprocess.run(command, capture_output=True, text=True, check=False)  # noqa: S603
    if result.returncode != 0:
        raise CheckFailed(f"{what}: {(result.stderr or result.stdout).strip()}")
    return result.stdout


def _documents(text: str) -> list[Doc]:
    return [d for d in yaml.safe_load_all(text) if d]


@dataclass(frozen=True)
class Source:
    """One way of rendering the manifests."""

    name: str  # base, staging, production, helm, helm-production
    path: Path  # a Kustomize directory, or the chart
    values: Path | None = None  # the chart's values file (None: its defaults)
    startable: bool = True  # whether ``--start`` runs its pods (not the bare base)
    release: str = RELEASE  # the chart's release name
    sets: tuple[str, ...] = ()  # the chart's --set NAME=VALUE

    @property
    def is_chart(self) -> bool:
        """Whether this is the Helm chart (else a Kustomize directory)."""
        return self.path == CHART

    @property
    def label(self) -> str:
        """How messages name it."""
        if not self.is_chart:
            return f"kustomize {self.path.relative_to(ROOT)}"
        values = f" -f {self.values.name}" if self.values else ""
        return f"helm {self.path.relative_to(ROOT)}{values}"

    def _values_args(self) -> list[str]:
        values = ["--values", str(self.values)] if self.values else []
        return values + [arg for pair in self.sets for arg in ("--set", pair)]

    def lint(self) -> None:
        """``helm lint --strict`` for the chart (nothing for Kustomize)."""
        if self.is_chart:
            command = [tool("helm"), "lint", "--strict", str(self.path), *self._values_args()]
            _run([*command, "--kube-version", f"{KUBERNETES_VERSION}.0"], f"{self.label}: lint")

    def render(self) -> list[Doc]:
        """The objects, as ``kubectl apply`` or ``helm install`` would send them."""
        if not self.is_chart:
            return _documents(_run([tool("kubectl"), "kustomize", str(self.path)], self.label))
        command = [tool("helm"), "template", self.release, str(self.path), "--namespace", NAMESPACE]
        command += [*self._values_args(), "--kube-version", f"{KUBERNETES_VERSION}.0"]
        return _documents(_run(command, self.label))


def all_sources() -> list[Source]:
    """The base, every overlay, and the chart with its default and production values."""
    overlays = sorted(p for p in (K8S / "overlays").iterdir() if p.is_dir())
    return [
        Source("base", K8S / "base", startable=False),
        *(Source(p.name, p) for p in overlays),
        Source("helm", CHART),
        Source("helm-production", CHART, CHART / "values-production.yaml"),
    ]


def sources(names: list[str]) -> list[Source]:
    """The sources named (all when none is), the base always."""
    found = all_sources()
    unknown = set(names) - {s.name for s in found}
    if unknown:
        raise CheckFailed(f"no such source {sorted(unknown)}: {[s.name for s in found]}")
    return [s for s in found if not names or s.name in names or s.name == "base"]
