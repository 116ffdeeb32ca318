"""Whether an RPC only reads is decided once (``kit/descriptors.py`` ``http_rules``): its HTTP
rule is GET. The gateway's routes, the coordinator's CSRF gate and the MCP tools' hints all
answer the same, for every RPC of the API.

The oracle here reads the ``google.api.http`` extension itself, so a scan that missed an RPC or
misread a rule fails too.
"""

from __future__ import annotations

from typing import Any

import pytest
from google.api import annotations_pb2
from google.protobuf import descriptor as _descriptor

from workcoord.coordinator.transport.gate import OPEN_METHODS, CallGate, is_state_changing
from workcoord.gateway.routes import load_routes
from workcoord.kit.descriptors import (
    api_file_descriptors,
    http_rules,
    is_read_only,
    message_class,
)
from workcoord.kit.mcp_server import _listed
from workcoord.kit.mcp_tools import mcp_tools
from workcoord.kit.wire import CallCredentials


def _every_rpc() -> list[_descriptor.MethodDescriptor]:
    return [
        method
        for file in api_file_descriptors()
        for service in file.services_by_name.values()
        for method in service.methods
    ]


def _rule_is_get(method: _descriptor.MethodDescriptor) -> bool:
    handle: Any = annotations_pb2.http
    options = method.GetOptions()
    return bool(
        options.HasExtension(handle) and options.Extensions[handle].WhichOneof("pattern") == "get"
    )


RPCS = _every_rpc()


def _path(method: _descriptor.MethodDescriptor) -> str:
    return f"/{method.containing_service.full_name}/{method.name}"


def test_the_scan_covers_every_rpc_and_reads_its_rule() -> None:
    assert list(http_rules()) == [method.full_name for method in RPCS]
    # Both kinds exist, so neither answer can be the constant one.
    assert {_rule_is_get(method) for method in RPCS} == {True, False}
    for method in RPCS:
        assert http_rules()[method.full_name].read_only is _rule_is_get(method), method.full_name
        assert is_read_only(method.full_name) is _rule_is_get(method), method.full_name
    assert is_read_only("workcoord.api.v1.NoSuchService.Get") is False


def test_every_route_carries_its_rpcs_answer() -> None:
    routes = load_routes().routes
    assert {route.method.full_name for route in routes} == {m.full_name for m in RPCS}
    for route in routes:
        assert route.read_only is _rule_is_get(route.method), route.operation_id
        assert route.read_only is (route.http_method == "GET"), route.operation_id


def test_the_mcp_hints_follow_the_rule() -> None:
    for tool in mcp_tools():
        get = _rule_is_get(tool.method)
        assert tool.read_only is get, tool.name
        hints = _listed(tool).annotations
        assert hints is not None
        assert hints.read_only_hint is get, tool.name
        assert hints.idempotent_hint is get, tool.name
        assert hints.destructive_hint is (None if get else False), tool.name
    assert {tool.read_only for tool in mcp_tools()} == {True, False}


class _Decided(Exception):
    """What the gate decided about the CSRF token, raised where it would authenticate."""

    def __init__(self, state_changing: bool) -> None:
        super().__init__(state_changing)
        self.state_changing = state_changing


class _DecisionOnlyGate(CallGate):
    """The real gate's per-method checks, stopped at the session authentication (which needs
    the CSRF token exactly when the call is state-changing)."""

    def __init__(self) -> None:  # no engine: nothing past the decision runs
        pass

    async def authenticate(
        self, credentials: CallCredentials, state_changing: bool
    ) -> tuple[Any, Any]:
        raise _Decided(state_changing)


class _Context:
    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return (("x-workcoord-session", "wcses_x"),)


@pytest.mark.parametrize("method", RPCS, ids=lambda method: method.full_name)
async def test_the_csrf_gate_demands_the_token_exactly_off_get(
    method: _descriptor.MethodDescriptor,
) -> None:
    path = _path(method)
    assert is_state_changing(path) is not _rule_is_get(method)
    check = _DecisionOnlyGate().check_for(path)
    assert check is not None
    if path in OPEN_METHODS:
        return  # no credential read at all: nothing to decide
    with pytest.raises(_Decided) as decided:
        await check(message_class(method.input_type)(), _Context())  # type: ignore[arg-type]
    assert decided.value.state_changing is not _rule_is_get(method)
