"""Shared fixtures of the kit tests: the test-only proto, generated at session start."""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

_HERE = Path(__file__).resolve().parent
_REPO = _HERE.parents[2]


@pytest.fixture(scope="session")
def kit_pb2(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    """``kittest.v1.kit_test_pb2``, generated into a temporary directory (never committed)."""
    out = tmp_path_factory.mktemp("kit_gen")
    spec = importlib.util.find_spec("grpc_tools")
    assert spec is not None and spec.origin is not None
    well_known = os.path.join(os.path.dirname(spec.origin), "_proto")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{_HERE / 'protos'}",
            f"-I{_REPO / 'protos'}",
            f"-I{well_known}",
            f"--python_out={out}",
            "kittest/v1/kit_test.proto",
        ],
        check=True,
    )
    sys.path.insert(0, str(out))
    return importlib.import_module("kittest.v1.kit_test_pb2")
