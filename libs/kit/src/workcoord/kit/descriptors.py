"""The v1 API as descriptors: its files, message classes and the comments written in the protos.

Everything derived from the contract (REST routes, the OpenAPI document, MCP tools) starts here,
so each reads the same files and the same comments.

The ``google.api.http`` rules are read here once (:func:`http_rules`), and with them the one
answer to "does this RPC only read?" (:attr:`RpcHttp.read_only`: its rule is ``GET``): the
gateway's routes, the coordinator's CSRF check and the MCP tools' hints all take it from here.

Comments come from the ``descriptor_set.binpb`` (a ``FileDescriptorSet`` with source info) that
``scripts/gen_protos.py`` ships next to the generated modules: the modules themselves carry none.
"""

from __future__ import annotations

import functools
import importlib.resources
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from google.api import annotations_pb2, field_behavior_pb2, http_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import descriptor_pb2, message_factory
from google.protobuf import message as _message

from workcoord.kit.wire import API_PACKAGE, api_modules

__all__ = [
    "API_PACKAGE",
    "HttpBinding",
    "RpcHttp",
    "api_file_descriptors",
    "call_deadline_seconds",
    "descriptor_of",
    "field_named",
    "http_rules",
    "is_map",
    "is_output_only",
    "is_read_only",
    "is_repeated",
    "is_well_known",
    "message_class",
    "method_descriptor",
    "proto_comments",
]

_log = logging.getLogger(__name__)

# A request that asks the server to wait (long-poll Lease) gets that wait on top of its deadline.
_WAIT_FIELD = "wait_seconds"
_MAX_WAIT_SECONDS = 3600


@functools.cache
def api_file_descriptors() -> tuple[_descriptor.FileDescriptor, ...]:
    """Every generated ``workcoord.api.v1`` file, imported so the default pool is complete."""
    return tuple(
        module.DESCRIPTOR
        for module in api_modules()
        if isinstance(getattr(module, "DESCRIPTOR", None), _descriptor.FileDescriptor)
    )


def method_descriptor(full_name: str) -> _descriptor.MethodDescriptor:
    """The RPC ``workcoord.api.v1.Service.Method``; ``KeyError`` if the API has no such RPC."""
    service_name, _, method_name = full_name.rpartition(".")
    for file in api_file_descriptors():
        for service in file.services_by_name.values():
            if service.full_name == service_name:
                method = service.methods_by_name.get(method_name)
                if method is not None:
                    return method
    raise KeyError(full_name)


@dataclass(frozen=True, slots=True)
class HttpBinding:
    """One HTTP binding of an RPC, as its ``google.api.http`` rule writes it."""

    verb: str
    """Upper-case HTTP verb (``GET``, ``POST``, …; a custom rule's kind as written)."""
    template: str
    """The path template, proto field names and all (``/v1/orgs/{org_slug}``)."""
    body: str
    """``""`` (no body), ``"*"`` (the whole request) or a top-level request field name."""
    response_body: str
    """``""`` (the whole response) or the top-level response field returned."""


@dataclass(frozen=True, slots=True)
class RpcHttp:
    """An RPC and its HTTP rule, read once from the descriptors."""

    method: _descriptor.MethodDescriptor
    bindings: tuple[HttpBinding, ...]
    """The rule itself first, then its ``additional_bindings``; empty for an RPC without one."""

    @property
    def read_only(self) -> bool:
        """Whether the RPC only reads: its HTTP rule is ``GET``. The one answer to the question:
        a browser session calls anything else only with its CSRF token (the coordinator's gate),
        and an MCP tool is hinted read-only and idempotent exactly when this holds. An RPC with
        no rule is not read-only (the safe answer for CSRF)."""
        return bool(self.bindings) and self.bindings[0].verb == "GET"


@functools.cache
def http_rules() -> Mapping[str, RpcHttp]:
    """Every RPC of the API by full name (``workcoord.api.v1.Service.Method``), in file,
    service and method order, with its HTTP bindings (scanned once).

    Raises ``ValueError`` for a rule whose bindings mix ``GET`` with other verbs: whether the
    RPC only reads would depend on the path it was called by.
    """
    rules: dict[str, RpcHttp] = {}
    for file in api_file_descriptors():
        for service in file.services_by_name.values():
            for method in service.methods:
                found = RpcHttp(method, _bindings(method))
                verbs = {binding.verb == "GET" for binding in found.bindings}
                if len(verbs) > 1:
                    raise ValueError(f"{method.full_name}: GET and other verbs in one http rule")
                rules[method.full_name] = found
    return rules


def is_read_only(full_name: str) -> bool:
    """:attr:`RpcHttp.read_only` of the RPC ``workcoord.api.v1.Service.Method``; False for a
    name the API does not have (nothing is known to only read)."""
    found = http_rules().get(full_name)
    return found is not None and found.read_only


def _bindings(method: _descriptor.MethodDescriptor) -> tuple[HttpBinding, ...]:
    options = method.GetOptions()
    # Typed loosely: the googleapis stubs give the handle a plain FieldDescriptor.
    handle: Any = annotations_pb2.http
    if not options.HasExtension(handle):
        return ()
    rule: http_pb2.HttpRule = options.Extensions[handle]
    return tuple(_binding(method, each) for each in (rule, *rule.additional_bindings))


def _binding(method: _descriptor.MethodDescriptor, rule: http_pb2.HttpRule) -> HttpBinding:
    kind = rule.WhichOneof("pattern")
    if kind is None:
        raise ValueError(f"{method.full_name}: an http rule without a pattern")
    if kind == "custom":
        verb, template = rule.custom.kind.upper(), rule.custom.path
    else:
        verb, template = kind.upper(), str(getattr(rule, kind))
    return HttpBinding(verb, template, rule.body, rule.response_body)


def descriptor_of(message: _message.Message) -> _descriptor.Descriptor:
    """``message.DESCRIPTOR``, typed as the pure-Python descriptor the stubs describe."""
    return cast(_descriptor.Descriptor, message.DESCRIPTOR)


def message_class(descriptor: _descriptor.Descriptor) -> type[_message.Message]:
    """The generated class of a message descriptor."""
    return message_factory.GetMessageClass(descriptor)


def call_deadline_seconds(request: _message.Message, base_seconds: float) -> float:
    """The deadline of a call carrying ``request``: ``base_seconds``, plus the request's own
    ``wait_seconds`` when it asks the server to wait (a long-poll must not time out first)."""
    field = descriptor_of(request).fields_by_name.get(_WAIT_FIELD)
    if field is None or field.cpp_type not in (
        field.CPPTYPE_INT32,
        field.CPPTYPE_INT64,
        field.CPPTYPE_UINT32,
        field.CPPTYPE_UINT64,
    ):
        return base_seconds
    wait = int(getattr(request, _WAIT_FIELD))
    return base_seconds + max(0, min(wait, _MAX_WAIT_SECONDS))


def field_named(message: _descriptor.Descriptor, name: str) -> _descriptor.FieldDescriptor | None:
    """The field of ``message`` called ``name`` by its proto or its JSON name."""
    field = message.fields_by_name.get(name)
    if field is not None:
        return field
    for candidate in message.fields:
        if candidate.json_name == name:
            return candidate
    return None


def is_repeated(field: _descriptor.FieldDescriptor) -> bool:
    """Repeated (maps included)."""
    return bool(field.is_repeated)


def is_map(field: _descriptor.FieldDescriptor) -> bool:
    """A ``map<…>`` field."""
    return bool(
        field.is_repeated
        and field.message_type is not None
        and field.message_type.GetOptions().map_entry
    )


def is_well_known(field: _descriptor.FieldDescriptor) -> bool:
    """A ``google.protobuf.*`` message field (its JSON form is its own: a string, any value…)."""
    return field.message_type is not None and field.message_type.full_name.startswith(
        "google.protobuf."
    )


def is_output_only(field: _descriptor.FieldDescriptor) -> bool:
    """Whether the field carries ``(google.api.field_behavior) = OUTPUT_ONLY``."""
    # Typed loosely: the googleapis stubs give the handle a plain FieldDescriptor.
    handle: Any = field_behavior_pb2.field_behavior
    behaviors: Sequence[int] = field.GetOptions().Extensions[handle]
    return field_behavior_pb2.OUTPUT_ONLY in behaviors


# --- comments from the descriptor set with source info ----------------------------------------

_DESCRIPTOR_SET = "descriptor_set.binpb"
# FileDescriptorProto / DescriptorProto / ServiceDescriptorProto field numbers.
_FILE_MESSAGE, _FILE_ENUM, _FILE_SERVICE = 4, 5, 6
_MESSAGE_FIELD, _MESSAGE_NESTED, _MESSAGE_ENUM = 2, 3, 4
_ENUM_VALUE, _SERVICE_METHOD = 2, 2


@functools.cache
def proto_comments() -> dict[str, str]:
    """Leading comments by full name (services, methods, messages, fields, enums).

    Empty when no descriptor set is shipped: comments are a nicety, so a missing or broken file
    only costs the descriptions (logged), never the caller.
    """
    try:
        resource = importlib.resources.files(API_PACKAGE).joinpath(_DESCRIPTOR_SET)
        if not resource.is_file():
            return {}
        descriptor_set = descriptor_pb2.FileDescriptorSet.FromString(resource.read_bytes())
    except Exception:
        _log.warning("unreadable %s; descriptions fall back to names", _DESCRIPTOR_SET)
        return {}
    known = {file.name for file in api_file_descriptors()}
    comments: dict[str, str] = {}
    for file in descriptor_set.file:
        if file.name in known:
            comments.update(_file_comments(file))
    return comments


def _file_comments(file: descriptor_pb2.FileDescriptorProto) -> dict[str, str]:
    by_path = {
        tuple(location.path): _clean(location.leading_comments)
        for location in file.source_code_info.location
        if location.leading_comments
    }
    out: dict[str, str] = {}
    package = file.package

    def message(proto: descriptor_pb2.DescriptorProto, scope: str, path: tuple[int, ...]) -> None:
        name = f"{scope}.{proto.name}"
        _put(out, name, by_path.get(path))
        for index, field in enumerate(proto.field):
            _put(out, f"{name}.{field.name}", by_path.get((*path, _MESSAGE_FIELD, index)))
        for index, nested in enumerate(proto.nested_type):
            message(nested, name, (*path, _MESSAGE_NESTED, index))
        for index, enum in enumerate(proto.enum_type):
            _put(out, f"{name}.{enum.name}", by_path.get((*path, _MESSAGE_ENUM, index)))

    for index, proto in enumerate(file.message_type):
        message(proto, package, (_FILE_MESSAGE, index))
    for index, service in enumerate(file.service):
        name = f"{package}.{service.name}"
        _put(out, name, by_path.get((_FILE_SERVICE, index)))
        for m_index, method in enumerate(service.method):
            path = (_FILE_SERVICE, index, _SERVICE_METHOD, m_index)
            _put(out, f"{name}.{method.name}", by_path.get(path))
    return out


def _put(out: dict[str, str], name: str, text: str | None) -> None:
    if text:
        out[name] = text


def _clean(comment: str) -> str:
    return re.sub(r"[ \t]*\n[ \t]*", "\n", comment.strip())
