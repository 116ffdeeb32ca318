"""The deploy check (scripts/deploy_check) as a module, and every source rendered once.

Rendering needs kubectl and helm (scripts/install-kubectl and scripts/install-helm provide them
in CI, before the tests run)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
Doc = dict[str, Any]


def _load() -> ModuleType:
    # scripts/ is no package of the workspace: import its deploy_check package by path.
    scripts = str(ROOT / "scripts")
    if scripts not in sys.path:
        sys.path.insert(0, scripts)
    return importlib.import_module("deploy_check.cli")


CHECK = _load()


@pytest.fixture(scope="session")
def check() -> ModuleType:
    """The package's modules: ``check.cli``, ``check.render``, ``check.config`` …"""
    return importlib.import_module("deploy_check")


@pytest.fixture(scope="session")
def rendered(check: ModuleType) -> dict[str, list[Doc]]:
    """Every source (base, overlays, the chart with default and production values) rendered."""
    return {source.name: source.render() for source in check.render.all_sources()}
