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
    children,
    completion,
    config,
    coordinators,
    db,
    dev,
    items,
    lane,
    mcp,
    profiles,
    reads,
    serve,
    trackers,
    watch,
    webhooks,
    worker,
)
from workcoord.cli.common import EXIT_ERROR, EXIT_USAGE, CliError, Handler, print_error
from workcoord.kit.errors import WorkcoordError

__all__ = ["EXIT_BROKEN_PIPE", "build_parser", "main"]

_EXIT_INTERRUPTED = 130
_PROFILE_PARSER = argparse.ArgumentParser(add_help=False)
_PROFILE_PARSER.add_argument("--profile")
# What a shell reports for a command killed by SIGPIPE (128 + 13): `workcoord view | head`.
EXIT_BROKEN_PIPE = 141


def build_parser() -> argparse.ArgumentParser:
    """The full command tree."""
    parser = argparse.ArgumentParser(
        prog="workcoord",
        description="workcoord: a durable, multi-tenant work coordinator for fleets of agents",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    parser.add_argument(
        "--profile",
        metavar="NAME",
        help=f"the saved profile to use (env {profiles.PROFILE_ENV}; see 'workcoord config')",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in (
        dev,
        serve,
        db,
        admin,
        coordinators,
        children,
        lane,
        items,
        reads,
        watch,
        worker,
        mcp,
        trackers,
        webhooks,
        completion,
        config,
    ):
        module.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``), run the command, return its exit code."""
    # The profile first: the connection and output flags take their defaults from it.
    chosen, _ = _PROFILE_PARSER.parse_known_args(sys.argv[1:] if argv is None else argv)
    try:
        profiles.select(chosen.profile)
    except profiles.ProfileError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
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
    except profiles.ProfileError as err:  # the profile's token file, read on connecting
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
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
