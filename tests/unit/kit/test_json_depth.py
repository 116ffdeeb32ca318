"""``MAX_JSON_DEPTH`` is one limit that holds on every side: free-form JSON at the limit, in
every ``Struct`` field of every request and response of the API, encodes and decodes (upb
refuses past 100 message levels, three per JSON object), passes the coordinator's field rules
and reads back from JSON; one level more is refused naming the field, by the JSON reader of the
gateway and MCP and by the coordinator's rules alike."""

from __future__ import annotations

from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from workcoord.kit.descriptors import api_file_descriptors, message_class
from workcoord.kit.errors import InvalidArgument
from workcoord.kit.proto_json import parse_json_into
from workcoord.kit.validation import JSON_TOO_DEEP, MAX_JSON_DEPTH, validate

_STRUCT = "google.protobuf.Struct"
Site = tuple[Descriptor, tuple[FieldDescriptor, ...]]


def _struct_sites() -> list[Site]:
    """(top-level message, field path) of every Struct reachable from an RPC's messages."""
    tops: dict[str, Descriptor] = {}
    for file in api_file_descriptors():
        for service in file.services_by_name.values():
            for method in service.methods:
                tops[method.input_type.full_name] = method.input_type
                tops[method.output_type.full_name] = method.output_type
    sites: list[Site] = []
    for top in tops.values():
        pending: list[tuple[Descriptor, tuple[FieldDescriptor, ...]]] = [(top, ())]
        while pending:
            message, path = pending.pop()
            # One message is recursive: an Explanation of a lane holds its items' (once).
            if sum(f.message_type is message for f in path) > 2:
                continue
            for field in message.fields:
                inner = field.message_type
                if inner is None:
                    continue
                if inner.GetOptions().map_entry:
                    inner = inner.fields_by_name["value"].message_type
                    if inner is None:
                        continue
                if inner.full_name == _STRUCT:
                    sites.append((top, (*path, field)))
                elif not inner.full_name.startswith("google."):
                    pending.append((inner, (*path, field)))
    return sites


def _nest(levels: int) -> dict[str, Any]:
    value: Any = "leaf"
    for _ in range(levels):
        value = {"a": value}
    assert isinstance(value, dict)
    return value


def _fill(top: Descriptor, path: tuple[FieldDescriptor, ...], levels: int) -> Message:
    message = message_class(top)()
    current: Any = message
    for field in path:
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            current = getattr(current, field.name)["k"]
        elif field.is_repeated:
            current = getattr(current, field.name).add()
        else:
            current = getattr(current, field.name)
    current.update(_nest(levels))
    return message


def _shown(site: Site) -> str:
    return f"{site[0].name}." + ".".join(f.name for f in site[1])


def test_the_api_has_struct_fields_in_requests_and_responses() -> None:
    names = {_shown(site) for site in _struct_sites()}
    assert "CreateLaneRequest.lane.items.inputs" in names
    assert "LeaseResponse.leases.item.inputs" in names
    assert "WatchResponse.snapshot.view.lanes.items.inputs" in names  # the deepest


def test_json_at_the_limit_holds_everywhere() -> None:
    for site in _struct_sites():
        message = _fill(*site, MAX_JSON_DEPTH)
        # Decodes with room to spare: three more levels of objects would still decode.
        decoded = type(message).FromString(message.SerializeToString())
        assert decoded == message, _shown(site)
        type(message).FromString(_fill(*site, MAX_JSON_DEPTH + 3).SerializeToString())
        assert all(v.description != JSON_TOO_DEEP for v in validate(message)), _shown(site)
        again = type(message)()
        json_format.ParseDict(json_format.MessageToDict(message), again)
        assert again == message, _shown(site)


def test_one_level_more_is_refused_by_the_reader_and_the_rules() -> None:
    for site in _struct_sites():
        deeper = _fill(*site, MAX_JSON_DEPTH + 1)
        refused_by_rules = [v for v in validate(deeper) if v.description == JSON_TOO_DEEP]
        assert len(refused_by_rules) == 1, _shown(site)
        as_json = json_format.MessageToDict(deeper)
        try:
            parse_json_into(as_json, type(deeper)())
        except InvalidArgument as refused:
            fields = [v.field for v in refused.field_violations]
        else:
            raise AssertionError(f"{_shown(site)} was read")
        # Both name the same field (indexes and map keys aside).
        assert [f.replace("[0]", "").replace("[k]", "") for f in fields] == [
            ".".join(f.name for f in site[1])
        ], _shown(site)
        assert refused_by_rules[0].field.startswith(fields[0].split("[")[0])
