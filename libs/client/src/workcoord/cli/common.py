"""What every command shares: connection flags, proto3 JSON in and out, error reporting.

Exit codes: 0 success, 1 the server (or a file) refused, 2 bad usage or configuration.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, TextIO, TypedDict, TypeVar

from google.protobuf import json_format, timestamp_pb2
from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper
from google.protobuf.message import Message

from workcoord.cli import output as output_module
from workcoord.cli import profiles
from workcoord.client.client import DEFAULT_ADDRESS, WorkcoordClient
from workcoord.kit.errors import WorkcoordError

__all__ = [
    "EXIT_ERROR",
    "EXIT_OK",
    "EXIT_USAGE",
    "CliError",
    "Handler",
    "Paging",
    "SubCommands",
    "add_client_flags",
    "add_command_group",
    "add_connection_flags",
    "add_coordinator_flag",
    "add_paging_flags",
    "add_repeated_choice",
    "client_from_args",
    "default_address",
    "enum_names",
    "load_message",
    "paging",
    "parse_bool",
    "parse_positive_seconds",
    "parse_timestamp",
    "print_error",
    "request_of",
    "require_given",
    "run_call",
    "run_client_command",
    "set_call",
    "token_from",
]

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2

Handler = Callable[[argparse.Namespace], int]
_M = TypeVar("_M", bound=Message)
_R = TypeVar("_R", bound=Message)


class CliError(Exception):
    """A problem the command reports on stderr before exiting with ``exit_code``."""

    def __init__(self, message: str, exit_code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def add_connection_flags(parser: argparse.ArgumentParser) -> None:
    """``--address`` (``WORKCOORD_ADDRESS``) and ``--token`` (``WORKCOORD_TOKEN``)."""
    group = parser.add_argument_group("connection")
    group.add_argument(
        "--address",
        default=default_address(),
        help="coordinator gRPC address (env WORKCOORD_ADDRESS, then the profile; default "
        "%(default)s)",
    )
    group.add_argument(
        "--token",
        default=None,
        help="admin token or work key (env WORKCOORD_TOKEN, then the profile's token_file; "
        "prefer those: flags are visible to other local users)",
    )


def add_coordinator_flag(parser: argparse.ArgumentParser) -> None:
    """``--coordinator ID`` (``WORKCOORD_COORDINATOR_ID``)."""
    default = os.environ.get("WORKCOORD_COORDINATOR_ID") or None
    parser.add_argument(
        "--coordinator",
        dest="coordinator_id",
        metavar="ID",
        default=default,
        required=default is None,
        help="work coordinator id (env WORKCOORD_COORDINATOR_ID)",
    )


def add_client_flags(
    parsers: Iterable[argparse.ArgumentParser], *, coordinator: bool = False
) -> None:
    """The connection flags and ``-o/--output`` on each of ``parsers`` (and ``--coordinator``
    first if asked)."""
    for parser in parsers:
        if coordinator:
            add_coordinator_flag(parser)
        output_module.add_output_flag(parser)
        add_connection_flags(parser)


SubCommands = argparse._SubParsersAction


def add_command_group(
    commands: SubCommands[argparse.ArgumentParser], dest: str, name: str, **options: Any
) -> SubCommands[argparse.ArgumentParser]:
    """Command ``name`` (``options`` as for ``add_parser``), which takes one of its own
    sub-commands; the one given is in ``dest``."""
    parser = commands.add_parser(name, **options)
    return parser.add_subparsers(dest=dest, metavar="COMMAND", required=True)


def enum_names(enum: EnumTypeWrapper) -> list[str]:
    """The names of a protobuf enum's values but the unspecified (zero) one, as ``choices``."""
    return [value.name for value in enum.DESCRIPTOR.values if value.number]


class Paging(TypedDict):
    """The paging fields every ``List…`` request shares, as keyword arguments."""

    page_size: int
    page_token: str


def add_paging_flags(parser: argparse.ArgumentParser) -> None:
    """``--page-size`` and ``--page-token`` (read back with :func:`paging`)."""
    parser.add_argument("--page-size", type=int, default=0)
    parser.add_argument("--page-token", default="")


def paging(args: argparse.Namespace) -> Paging:
    """The paging flags as request fields: ``ListLanesRequest(**paging(args), …)``."""
    return Paging(page_size=args.page_size, page_token=args.page_token)


def add_repeated_choice(
    parser: argparse.ArgumentParser, flag: str, dest: str, choices: Sequence[str]
) -> None:
    """A required flag taking one of ``choices``, given once per value."""
    parser.add_argument(
        flag, dest=dest, action="append", required=True, choices=choices, help="repeat for several"
    )


def parse_timestamp(text: str) -> timestamp_pb2.Timestamp:
    """An RFC 3339 time for argparse ``type=``."""
    stamp = timestamp_pb2.Timestamp()
    try:
        stamp.FromJsonString(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an RFC 3339 time: {text!r}") from None
    return stamp


def require_given(message: str, given: Iterable[tuple[str, object]]) -> None:
    """Refuse with a usage error when a value of ``given`` (name, value) is empty: ``message``
    followed by those names."""
    missing = [name for name, value in given if not value]
    if missing:
        raise CliError(message + ", ".join(missing), EXIT_USAGE)


def parse_positive_seconds(text: str) -> float:
    """A number of seconds above zero for argparse ``type=``."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError("must be positive")
    return value


def client_from_args(args: argparse.Namespace) -> WorkcoordClient:
    """A client for ``--address`` with ``--token`` (or ``WORKCOORD_TOKEN``)."""
    return WorkcoordClient(args.address, token_from(args.token))


def default_address() -> str:
    """``WORKCOORD_ADDRESS``, else the profile's address, else the default."""
    return os.environ.get("WORKCOORD_ADDRESS") or profiles.active("address") or DEFAULT_ADDRESS


def token_from(flag: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """``--token``, else ``WORKCOORD_TOKEN``, else the profile's token file (None: none)."""
    env = os.environ if environ is None else environ
    return flag or env.get("WORKCOORD_TOKEN") or profiles.profile_token()


def run_client_command(
    args: argparse.Namespace,
    body: Callable[[WorkcoordClient], Coroutine[Any, Any, Message | None]],
) -> int:
    """Run ``body`` with a client; print its result as JSON; report errors; the exit code."""

    async def go() -> Message | None:
        async with client_from_args(args) as client:
            return await body(client)

    return run_and_report(go, print_result=True, output=getattr(args, "output", "json"))


def run_call(
    args: argparse.Namespace, call: Callable[[WorkcoordClient], Awaitable[Message]]
) -> int:
    """Make one call with a client (``lambda client: client.lanes.GetLane(request)``); print
    its answer as JSON; report errors; the exit code."""

    async def body(client: WorkcoordClient) -> Message:
        return await call(client)

    return run_client_command(args, body)


def set_call(
    parser: argparse.ArgumentParser,
    build: Callable[[argparse.Namespace], _R],
    method: Callable[[WorkcoordClient], Callable[[_R], Awaitable[Message]]],
) -> None:
    """Make ``parser``'s command one call: ``build`` turns the flags into the request,
    ``method`` picks the stub method (``lambda c: c.admin.ListOrgs``); the answer is printed
    as with :func:`run_call`."""

    def handler(args: argparse.Namespace) -> int:
        request = build(args)
        return run_call(args, lambda client: method(client)(request))

    parser.set_defaults(handler=handler)


def request_of(
    request_type: Callable[..., _R], *flags: str, paged: bool = False
) -> Callable[[argparse.Namespace], _R]:
    """A ``build`` for :func:`set_call`: ``request_type`` with each of ``flags`` (a flag's
    ``dest``, the same as the request field's name) copied in, and :func:`paging` if ``paged``."""

    def build(args: argparse.Namespace) -> _R:
        fields: dict[str, Any] = {flag: getattr(args, flag) for flag in flags}
        if paged:
            fields.update(paging(args))
        return request_type(**fields)

    return build


def run_and_report(
    go: Callable[[], Awaitable[Message | None]],
    *,
    print_result: bool = True,
    output: str = "json",
) -> int:
    """Run the coroutine function ``go``; print its message (``output``: json or table); turn
    errors into exit codes."""

    async def main() -> Message | None:
        return await go()

    try:
        result = asyncio.run(main())
    except WorkcoordError as err:
        print_error(err)
        return EXIT_ERROR
    except CliError as err:
        print(f"error: {err}", file=sys.stderr)
        return err.exit_code
    if print_result and result is not None:
        output_module.print_result(result, output)
    return EXIT_OK


def print_error(err: WorkcoordError, stream: TextIO | None = None) -> None:
    """``error: REASON: message``, then each offending field on its own line."""
    out = stream or sys.stderr
    print(f"error: {err.reason}: {err.message}", file=out)
    for violation in err.field_violations:
        print(f"  {violation.field}: {violation.description}", file=out)
    for key, value in sorted(err.metadata.items()):
        print(f"  ({key}: {value})", file=out)


def load_message(path: str, message: _M) -> _M:
    """Fill ``message`` from the proto3 JSON in ``path`` (``-`` reads stdin); unknown fields
    are refused, as the API refuses them."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        json_format.Parse(text, message)
    except json_format.ParseError as exc:
        raise CliError(f"{path}: {exc}") from None
    return message


def parse_bool(text: str) -> bool:
    """``true``/``false`` (also yes/no, on/off, 1/0) for argparse ``type=``."""
    lowered = text.strip().lower()
    if lowered in ("true", "yes", "on", "1"):
        return True
    if lowered in ("false", "no", "off", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def parse_limit(value: str, *, dollars: bool) -> int | None:
    """A budget limit flag: ``none`` (no limit), dollars (``1.50``, as micro-dollars) or a
    count of tokens."""
    if value.strip().lower() == "none":
        return None
    try:
        amount = Decimal(value)
    except InvalidOperation:
        raise CliError(f"{value!r}: expected a number or none", EXIT_USAGE) from None
    scaled = amount * 1_000_000 if dollars else amount
    if scaled < 0 or scaled != scaled.to_integral_value():
        unit = "dollars with at most 6 decimals" if dollars else "a whole number of tokens"
        raise CliError(f"{value!r}: expected {unit}, or none", EXIT_USAGE)
    return int(scaled)
