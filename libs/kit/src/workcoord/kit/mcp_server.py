"""The MCP server over the tool table, for both transports (official ``mcp`` SDK, low level).

The server knows nothing of credentials or channels: the transport hands it a :data:`RpcCaller`
that performs one RPC for the caller of the current MCP request (the gateway forwards that HTTP
request's ``Authorization`` header through its upstream channel; ``workcoord mcp`` uses the
client's channel and token). The coordinator authenticates and authorizes every call, so
nothing is decided here.

Needs the ``mcp`` extra (``workcoord-kit[mcp]``).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from importlib import metadata
from typing import Any

import mcp_types as types
from google.protobuf import message as _message
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from workcoord.kit.errors import CoordinationDisabled, WorkcoordError
from workcoord.kit.mcp_tools import McpTool, error_body, mcp_tools, tool_named

__all__ = ["INSTRUCTIONS", "JSONRPC_SERVER_ERROR", "RpcCaller", "build_mcp_server", "serve_stdio"]

RpcCaller = Callable[
    [McpTool, _message.Message, ServerRequestContext[Any, Any]], Awaitable[_message.Message]
]
"""Performs the tool's RPC for the caller of the current request, or raises the typed
:class:`~workcoord.kit.errors.WorkcoordError` the coordinator answered."""

INSTRUCTIONS = (
    "workcoord hands out work. A worker's job: work_coordinators (which queues this credential "
    "may read) → lease_work (workerId, workerClass; keep leaseId and the secret leaseToken) → "
    "start_work with the run identity BEFORE running anything → heartbeat well before "
    "leaseExpireTime → complete_work with evidence (or checkpoint_work, fail_work, "
    "release_work). Every write presents the lease token; LEASE_LOST means stop working, and "
    "so does a heartbeat answer with stop (its first text says what to do next). "
    "view and why show the queue and what holds an item. Errors are google.rpc.Status JSON "
    "whose ErrorInfo reason is the same as over REST."
)


# JSON-RPC reserves -32000..-32099 for implementation-defined server errors; MCP clients show
# the message of any of them.
JSONRPC_SERVER_ERROR = -32001

# The tool whose RPC tells whether the switch leaves the caller anything to work on.
_SWITCH_PROBE = "work_coordinators"


def build_mcp_server(call: RpcCaller) -> Server[Any]:
    """A low-level MCP server listing the tools and answering each call through ``call``.

    ``tools/list`` is held to the switch like every call: it first asks the coordinator for one
    work coordinator this caller may reach (``ListWorkCoordinators``), and answers the
    JSON-RPC error ``COORDINATION_DISABLED: …`` (data: the ``google.rpc.Status`` JSON) when the
    coordinator refuses that because coordination is switched off for this caller.
    """
    listed = types.ListToolsResult(tools=[_listed(tool) for tool in mcp_tools()])
    probe = tool_named(_SWITCH_PROBE)
    assert probe is not None

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        try:
            await call(probe, probe.build_request({"pageSize": 1}), ctx)
        except CoordinationDisabled as err:
            raise MCPError(
                JSONRPC_SERVER_ERROR, f"{err.reason}: {err.message}", error_body(err)
            ) from None
        except WorkcoordError:
            # Only the switch withholds the list: any other failure (the coordinator not
            # reachable yet) is what each tool call will report for itself.
            pass
        return listed

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = tool_named(params.name)
        if tool is None:
            # The spec's answer to a tool that does not exist is a protocol error, not a result.
            raise MCPError(types.INVALID_PARAMS, f"unknown tool: {params.name[:100]}")
        try:
            request = tool.build_request(params.arguments)
            response = await call(tool, request, ctx)
        except WorkcoordError as err:
            return _error_result(err)
        return _result(tool.result(response))

    return Server(
        "workcoord",
        version=_version(),
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve_stdio(server: Server[Any]) -> None:
    """Serve ``server`` on this process's stdin/stdout until stdin closes."""
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def _listed(tool: McpTool) -> types.Tool:
    return types.Tool(
        name=tool.name,
        description=tool.description,
        input_schema=tool.input_schema,
        output_schema=tool.output_schema,
        annotations=types.ToolAnnotations(
            read_only_hint=tool.read_only,
            # Writes move work along (lease, complete, …); none deletes anything.
            destructive_hint=False if not tool.read_only else None,
            idempotent_hint=tool.read_only,
            open_world_hint=False,
        ),
    )


#: What an agent told ``stop`` by a heartbeat does next, per reason.
STOP_WORDS = {
    "BUDGET_EXHAUSTED": (
        "a budget covering this work is spent. Stop working now, send your final usage with "
        "one more heartbeat, then release_work; the item waits until a human raises the budget"
    ),
    "DEADLINE_EXCEEDED": (
        "this attempt ran past its max_run_duration. Stop working now and fail_work "
        "(retryable) with your final usage; the lease is lost one lease period after the "
        "deadline and the item is retried"
    ),
    "POLICY_CHANGED": (
        "the work coordinator's policy no longer allows this work. Stop working now and "
        "release_work"
    ),
    "CANCELLED": "the work was cancelled. Stop working now and release_work",
}


def stop_words(body: dict[str, Any]) -> str | None:
    """The sentence for a heartbeat answer's ``stop`` (None: no stop in ``body``)."""
    stop = body.get("stop")
    if not isinstance(stop, dict) or not stop.get("reason"):
        return None
    reason = str(stop["reason"])
    words = STOP_WORDS.get(reason, "the coordinator told this attempt to stop. Stop working now")
    said = f" (the coordinator says: {stop['message']})" if stop.get("message") else ""
    return f"STOP {reason}: {words}.{said}"


def _result(body: dict[str, Any]) -> types.CallToolResult:
    words = stop_words(body)
    content: list[types.ContentBlock] = [_text(body)]
    if words is not None:
        content.insert(0, types.TextContent(text=words))
    return types.CallToolResult(content=content, structured_content=body)


def _error_result(err: WorkcoordError) -> types.CallToolResult:
    body = error_body(err)
    return types.CallToolResult(content=[_text(body)], structured_content=body, is_error=True)


def _text(body: dict[str, Any]) -> types.TextContent:
    # Clients that show only text content still get the whole structured answer.
    return types.TextContent(text=json.dumps(body, ensure_ascii=False, separators=(",", ":")))


def _version() -> str:
    try:
        return metadata.version("workcoord-kit")
    except metadata.PackageNotFoundError:
        return "unknown"
