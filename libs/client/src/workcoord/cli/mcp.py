"""``workcoord mcp``: MCP on stdio (later work; registered so the command is discoverable)."""

from __future__ import annotations

import argparse

from workcoord.cli.common import EXIT_USAGE, CliError

__all__ = ["register"]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``mcp``."""
    mcp = commands.add_parser("mcp", help="serve MCP on stdio (not implemented yet)")
    mcp.set_defaults(handler=_mcp)


def _mcp(args: argparse.Namespace) -> int:
    raise CliError("workcoord mcp is not implemented yet", EXIT_USAGE)
