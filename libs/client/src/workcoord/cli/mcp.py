"""``workcoord mcp``: the coordinator's tools for agents, as an MCP server on stdio.

An agent starts it as a subprocess (one line of configuration) and speaks MCP on its stdin and
stdout; every tool call is one gRPC call to the coordinator with the configured credential
(``WORKCOORD_TOKEN`` or ``--token``) at ``WORKCOORD_ADDRESS`` (or ``--address``). The tools and
their schemas are the gateway's ``/mcp`` ones (:mod:`workcoord.kit.mcp_tools`).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from google.protobuf import message as _message

from workcoord.api.v1 import admin_pb2
from workcoord.cli.common import (
    EXIT_USAGE,
    CliError,
    add_connection_flags,
    run_and_report,
    token_from,
)
from workcoord.client.client import WorkcoordClient
from workcoord.kit.descriptors import call_deadline_seconds
from workcoord.kit.errors import Unauthenticated, WorkcoordError
from workcoord.kit.mcp_tools import McpTool

if TYPE_CHECKING:
    from workcoord.kit.mcp_server import RpcCaller

__all__ = ["register"]

# As the gateway's default request timeout; a long-poll Lease adds its own wait.
_CALL_TIMEOUT_SECONDS = 30.0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``mcp``."""
    mcp = commands.add_parser(
        "mcp",
        help="serve the coordinator's tools to an agent over MCP on stdio",
        description="Serve MCP on stdin/stdout (for an agent to start as a subprocess). Needs "
        "a work key or user token in WORKCOORD_TOKEN; nothing but MCP is written to stdout.",
    )
    add_connection_flags(mcp)
    mcp.set_defaults(handler=_mcp)


def _mcp(args: argparse.Namespace) -> int:
    token = token_from(args.token)
    if token is None:
        raise CliError(
            "workcoord mcp needs a work key or user token: set WORKCOORD_TOKEN (or --token)",
            EXIT_USAGE,
        )
    address: str = args.address

    async def go() -> None:
        await _serve(address, token)

    return run_and_report(go, print_result=False)


async def _serve(address: str, token: str) -> None:
    try:
        # Imported here: the MCP SDK is the client's optional 'mcp' extra, and every other
        # command must work without it.
        from workcoord.kit.mcp_server import build_mcp_server, serve_stdio
    except ImportError:
        raise CliError(
            "workcoord mcp needs the MCP SDK: pip install 'workcoord-client[mcp]'", EXIT_USAGE
        ) from None
    async with WorkcoordClient(address, token) as client:
        await _check_credential(client)
        await serve_stdio(build_mcp_server(_caller(client)))


async def _check_credential(client: WorkcoordClient) -> None:
    """Refuse to start with a credential the coordinator does not know; start anyway when it
    cannot be asked (the agent may start first: each call reports its own error)."""
    try:
        await client.admin.GetCurrentPrincipal(
            admin_pb2.GetCurrentPrincipalRequest(), timeout=_CALL_TIMEOUT_SECONDS
        )
    except Unauthenticated:
        raise
    except WorkcoordError as err:
        print(f"workcoord mcp: warning: {err.reason}: {err.message}", file=sys.stderr)


def _caller(client: WorkcoordClient) -> RpcCaller:
    callables: dict[str, Any] = {}

    async def call(tool: McpTool, request: _message.Message, context: Any) -> _message.Message:
        method = callables.get(tool.name)
        if method is None:
            method = callables[tool.name] = client.channel.unary_unary(
                tool.full_method,
                request_serializer=_serialize,
                response_deserializer=tool.response_class.FromString,
            )
        # The client's interceptors attach the credential and raise the typed error.
        response: _message.Message = await method(
            request, timeout=call_deadline_seconds(request, _CALL_TIMEOUT_SECONDS)
        )
        return response

    return call


def _serialize(message: _message.Message) -> bytes:
    return message.SerializeToString()
