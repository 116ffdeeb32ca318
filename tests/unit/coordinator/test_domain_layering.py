"""The domain is plain Python: it imports neither grpc nor sqlalchemy (transport and storage
sit around it and depend on it, never the other way round)."""

from __future__ import annotations

import json
import subprocess
import sys

_MODULES = [
    "workcoord.coordinator.domain.engine",
    "workcoord.coordinator.domain.rules",
    "workcoord.coordinator.domain.auth",
    "workcoord.coordinator.domain.model",
    "workcoord.coordinator.domain.ports",
    "workcoord.coordinator.domain.specs",
    "workcoord.coordinator.domain.grants",
    "workcoord.coordinator.domain.tenancy",
    "workcoord.coordinator.checker",
    "workcoord.coordinator.storage.memory",
]


def _loaded_after_import(modules: list[str]) -> set[str]:
    script = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    return set(json.loads(result.stdout))


def test_domain_imports_neither_grpc_nor_sqlalchemy() -> None:
    loaded = _loaded_after_import(_MODULES)
    offenders = sorted(
        m for m in loaded if m.split(".")[0] in {"grpc", "sqlalchemy", "alembic", "asyncpg"}
    )
    assert offenders == []
    # The probe itself works: the domain modules were really imported.
    assert "workcoord.coordinator.domain.engine" in loaded


def test_the_probe_sees_sqlalchemy_when_storage_is_imported() -> None:
    # Guards the test above against passing vacuously (e.g. a probe that never imports).
    loaded = _loaded_after_import(["workcoord.coordinator.storage.sql"])
    assert "sqlalchemy" in loaded
