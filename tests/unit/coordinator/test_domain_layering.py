"""The domain is plain Python: it imports neither grpc nor sqlalchemy. Every module of the
domain package (the engine's concern modules included) is imported, found by walking it."""

from __future__ import annotations

import json
import subprocess
import sys

_DOMAIN = "workcoord.coordinator.domain"
_ALSO = ["workcoord.coordinator.storage.memory"]


def _loaded_after_import(modules: list[str], walk: str = "") -> set[str]:
    script = (
        "import importlib, json, pkgutil, sys\n"
        f"names = {modules!r}\n"
        f"if {walk!r}:\n"
        f"    root = importlib.import_module({walk!r})\n"
        f"    names += [m.name for m in pkgutil.walk_packages(root.__path__, {walk!r} + '.')]\n"
        "for name in names:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    return set(json.loads(result.stdout))


def test_domain_imports_neither_grpc_nor_sqlalchemy() -> None:
    loaded = _loaded_after_import(_ALSO, walk=_DOMAIN)
    offenders = sorted(
        m for m in loaded if m.split(".")[0] in {"grpc", "sqlalchemy", "alembic", "asyncpg"}
    )
    assert offenders == []
    # The probe itself works: the domain modules, down to the engine's, were really imported.
    assert {
        f"{_DOMAIN}.engine",
        f"{_DOMAIN}.engine.leasing",
        f"{_DOMAIN}.engine.gates",
        f"{_DOMAIN}.engine.children",
        f"{_DOMAIN}.feed",
    } <= loaded


def test_the_probe_sees_sqlalchemy_when_storage_is_imported() -> None:
    # Guards the test above against passing vacuously (e.g. a probe that never imports).
    loaded = _loaded_after_import(["workcoord.coordinator.storage.sql"])
    assert "sqlalchemy" in loaded
