"""The client stays light: its command line and the MCP tool table load without the MCP SDK or
Starlette, which only ``workcoord mcp`` (the client's ``mcp`` extra) and the gateway need."""

from __future__ import annotations

import json
import subprocess
import sys

_SERVER_SIDE = {"mcp", "mcp_types", "starlette", "uvicorn", "sqlalchemy"}


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


def test_the_cli_and_the_tool_table_import_no_server_side_package() -> None:
    loaded = _loaded_after_import(["workcoord.cli.main", "workcoord.kit.mcp_tools"])
    assert sorted(m for m in loaded if m.split(".")[0] in _SERVER_SIDE) == []
    assert "workcoord.cli.mcp" in loaded


def test_the_probe_sees_the_sdk_when_the_mcp_server_is_imported() -> None:
    # Guards the test above against passing vacuously.
    assert {"mcp", "starlette"} <= _loaded_after_import(["workcoord.kit.mcp_server"])
