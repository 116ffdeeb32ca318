"""deploy/Dockerfile builds from the lock file alone, reaching nothing but the package index
(read, not built: base images cannot be pulled everywhere the tests run)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DOCKERFILE = (ROOT / "deploy" / "Dockerfile").read_text(encoding="utf-8")


def _instructions() -> list[str]:
    """Each instruction on one line (continuations joined), comments left out."""
    joined = re.sub(r"\\\n\s*", " ", DOCKERFILE)
    return [line.strip() for line in joined.splitlines() if line.strip() and line[0] != "#"]


def test_every_uv_sync_is_locked_and_nothing_is_downloaded_by_hand() -> None:
    runs = [line for line in _instructions() if line.startswith("RUN ")]
    syncs = [line for line in runs if "uv sync" in line]
    assert len(syncs) == 2
    assert all("--locked" in line and "--no-dev" in line for line in syncs)
    for line in runs:
        assert not re.search(r"\b(curl|wget|git clone)\b", line), line
        assert "uv pip install" not in line and "uv lock" not in line, line
    assert not [line for line in _instructions() if re.match(r"ADD\s+https?://", line)]
    assert "UV_PYTHON_DOWNLOADS=never" in DOCKERFILE  # the base image's Python, never fetched


def test_the_dependency_layer_sees_every_workspace_member() -> None:
    workspace = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    members = sorted(
        str(path.parent.relative_to(ROOT))
        for pattern in workspace["tool"]["uv"]["workspace"]["members"]
        for path in ROOT.glob(f"{pattern}/pyproject.toml")
    )
    first_sync = DOCKERFILE.index("uv sync")
    copied = re.findall(r"^COPY (\S+)/pyproject\.toml ", DOCKERFILE[:first_sync], re.M)
    assert sorted(copied) == members
    assert "COPY pyproject.toml uv.lock ./" in DOCKERFILE[:first_sync]
