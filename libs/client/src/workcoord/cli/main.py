"""The ``workcoord`` command: argparse, one module per command group.

Exit codes: 0 success, 1 the server (or an input file) refused, 2 bad usage or configuration.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from importlib import metadata

from workcoord.cli import (
    admin,
    completion,
    coordinators,
    db,
    dev,
    items,
    lane,
    mcp,
    reads,
    serve,
    watch,
    worker,
)
from workcoord.cli.common import EXIT_ERROR, CliError, Handler, print_error
from workcoord.kit.errors import WorkcoordError

__all__ = ["EXIT_BROKEN_PIPE", "build_parser", "main"]

_EXIT_INTERRUPTED = 130
# What a shell reports for a command killed by SIGPIPE (128 + 13): `workcoord view | head`.
EXIT_BROKEN_PIPE = 141


def build_parser() -> argparse.ArgumentParser:
    """The full command tree."""
    parser = argparse.ArgumentParser(
        prog="workcoord",
        description="workcoord: a durable, multi-tenant work coordinator for fleets of agents",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in (
        dev,
        serve,
        db,
        admin,
        coordinators,
        lane,
        items,
        reads,
        watch,
        worker,
        mcp,
        completion,
    ):
        module.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``), run the command, return its exit code."""
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    try:
        code = handler(args)
        sys.stdout.flush()  # here, where a closed pipe is caught, not at interpreter exit
        return code
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except CliError as err:
        print(f"error: {err}", file=sys.stderr)
        return err.exit_code
    except WorkcoordError as err:
        print_error(err)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return _EXIT_INTERRUPTED


def _silence_stdout() -> None:
    """Point stdout at /dev/null: the reader has gone, and Python's final flush of what is
    still buffered must not fail again (a second BrokenPipeError, printed at exit)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real file descriptor (a test's captured stream)
        pass
    finally:
        os.close(devnull)


def _version() -> str:
    try:
        return metadata.version("workcoord-client")
    except metadata.PackageNotFoundError:
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
