"""The REST route table, derived from the ``google.api.http`` annotations of the v1 protos.

Every method of every service in ``workcoord.api.v1`` that carries an ``HttpRule`` becomes one
:class:`Route` per binding (the rule itself plus its ``additional_bindings``, as
:func:`workcoord.kit.descriptors.http_rules` read them, with whether the RPC only reads); nothing
here names an RPC. Path templates follow ``google/api/http.proto``: ``{field}``, ``{field.sub}``,
``{field=segments/*/with/**}`` and a trailing ``:verb``. Public paths name their variables by
their JSON names (``{coordinatorId}``), as in the OpenAPI document.

The template parser is hand-written: no maintained Python library implements the HttpRule
grammar (grpc-gateway and Envoy are Go and C++).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote

from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message

from workcoord.kit.descriptors import API_PACKAGE, HttpBinding, RpcHttp, http_rules, message_class

__all__ = [
    "Route",
    "RouteMatch",
    "RouteTable",
    "load_routes",
]

# Services answered by the recovery process; everything else is the coordinator's.
_RECOVERY_SERVICES = frozenset({f"{API_PACKAGE}.RecoveryService"})

Upstream = Literal["coordinator", "recovery"]


@dataclass(frozen=True, slots=True)
class Route:
    """One HTTP binding of one RPC."""

    service: str
    """Full service name, e.g. ``workcoord.api.v1.LaneService``."""
    method: _descriptor.MethodDescriptor
    http_method: str
    """Upper-case HTTP verb (``GET``, ``POST``, …; a custom rule's kind as written)."""
    template: str
    """The template as written in the proto (proto field names)."""
    path: str
    """The public path: variables named by JSON names, e.g. ``/v1/orgs/{orgSlug}``."""
    path_fields: tuple[str, ...]
    """Proto field paths bound by the path, in order (``coordinator_id``, ``lease.id``…)."""
    path_params: tuple[str, ...]
    """The JSON names of the same variables, as they appear in :attr:`path`."""
    regex: re.Pattern[str]
    """Matches the raw (percent-encoded) request path; group ``p<i>`` is variable ``i``."""
    body: str
    """``""`` (no body), ``"*"`` (the whole request) or a top-level proto field name."""
    response_body: str
    """``""`` (the whole response) or the top-level response field returned."""
    binding_index: int
    """0 for the rule itself, 1… for its additional bindings."""
    read_only: bool
    """Whether the RPC only reads (:attr:`workcoord.kit.descriptors.RpcHttp.read_only`)."""

    @property
    def streaming(self) -> bool:
        """Server-streaming RPCs are served as WebSockets, not as plain REST."""
        return bool(self.method.server_streaming)

    @property
    def full_method(self) -> str:
        """The gRPC method path, ``/package.Service/Method``."""
        return f"/{self.service}/{self.method.name}"

    @property
    def upstream(self) -> Upstream:
        """Which gRPC server answers this route."""
        return "recovery" if self.service in _RECOVERY_SERVICES else "coordinator"

    @property
    def operation_id(self) -> str:
        """``Service_Method`` (``_<n>`` appended for additional bindings)."""
        base = f"{self.method.containing_service.name}_{self.method.name}"
        return base if self.binding_index == 0 else f"{base}_{self.binding_index}"

    @property
    def request_class(self) -> type[_message.Message]:
        """The generated request message class."""
        return message_class(self.method.input_type)

    @property
    def response_class(self) -> type[_message.Message]:
        """The generated response message class."""
        return message_class(self.method.output_type)

    def match(self, raw_path: str) -> dict[str, str] | None:
        """The decoded path variables (by proto field path) if ``raw_path`` matches."""
        found = self.regex.fullmatch(raw_path)
        if found is None:
            return None
        return {
            field: unquote(found.group(f"p{index}")) for index, field in enumerate(self.path_fields)
        }


@dataclass(frozen=True, slots=True)
class RouteMatch:
    """A request path resolved against the table."""

    route: Route
    path_values: dict[str, str]


class RouteTable:
    """All routes, with lookup by path and method."""

    def __init__(self, routes: Sequence[Route]) -> None:
        # Literal segments win over variables (``/lanes/{id}`` vs ``/lanes/-:verb``), the way
        # grpc-gateway ranks patterns: more literals first, then longer templates.
        self.routes: tuple[Route, ...] = tuple(sorted(routes, key=_specificity))

    def __len__(self) -> int:
        return len(self.routes)

    def __iter__(self) -> Iterable[Route]:  # pragma: no cover - convenience
        return iter(self.routes)

    def resolve(self, http_method: str, raw_path: str) -> tuple[RouteMatch | None, list[str]]:
        """The route for ``http_method raw_path`` and, either way, the methods the path allows.

        ``(None, [])``: no such path (404). ``(None, [...])``: known path, wrong method (405).
        """
        allowed: list[str] = []
        for route in self.routes:
            values = route.match(raw_path)
            if values is None:
                continue
            if route.http_method == http_method:
                return RouteMatch(route, values), allowed
            if route.http_method not in allowed:
                allowed.append(route.http_method)
        return None, allowed


def _specificity(route: Route) -> tuple[int, int, str]:
    literals = sum(
        1 for segment in route.template.split("/") if segment and not segment.startswith("{")
    )
    return (-literals, -len(route.template), route.template)


@functools.cache
def load_routes() -> RouteTable:
    """The route table of every annotated RPC of the v1 API (built once)."""
    return RouteTable(
        [
            _route(rpc, binding, index)
            for rpc in http_rules().values()
            for index, binding in enumerate(rpc.bindings)
        ]
    )


def _route(rpc: RpcHttp, binding: HttpBinding, index: int) -> Route:
    method = rpc.method
    where = method.full_name
    regex, fields, public = _compile_template(binding.template, method.input_type, where)
    body = binding.body
    if body and body != "*" and body not in method.input_type.fields_by_name:
        raise ValueError(f"{where}: body field {body!r} is not a request field")
    response_body = binding.response_body
    if response_body and response_body not in method.output_type.fields_by_name:
        raise ValueError(f"{where}: response_body {response_body!r} is not a response field")
    return Route(
        service=method.containing_service.full_name,
        method=method,
        http_method=binding.verb,
        template=binding.template,
        path=public,
        path_fields=tuple(fields),
        path_params=tuple(_json_path(method.input_type, field) for field in fields),
        regex=regex,
        body=body,
        response_body=response_body,
        binding_index=index,
        read_only=rpc.read_only,
    )


# A variable: {field.path} or {field.path=segments}
_VARIABLE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.]*)(?:=([^}]*))?\}")


def _compile_template(
    template: str, request: _descriptor.Descriptor, where: str
) -> tuple[re.Pattern[str], list[str], str]:
    """Regex over the raw path, bound proto field paths, and the public (JSON-named) path."""
    if not template.startswith("/"):
        raise ValueError(f"{where}: path template must start with '/': {template!r}")
    verb = ""
    # The verb is the last ':' outside a variable, e.g. /v1/{name=items/*}:cancel.
    last_close = template.rfind("}")
    colon = template.rfind(":")
    if colon > last_close:
        template, verb = template[:colon], template[colon + 1 :]
    pattern: list[str] = []
    public: list[str] = []
    fields: list[str] = []
    position = 0
    for found in _VARIABLE.finditer(template):
        literal = template[position : found.start()]
        pattern.append(_literal_regex(literal))
        public.append(literal)
        field, segments = found.group(1), found.group(2) or "*"
        _check_field_path(request, field, where)
        pattern.append(f"(?P<p{len(fields)}>{_segments_regex(segments)})")
        public.append("{" + _json_path(request, field) + "}")
        fields.append(field)
        position = found.end()
    tail = template[position:]
    if "{" in tail or "}" in tail:
        raise ValueError(f"{where}: malformed path template {template!r}")
    pattern.append(_literal_regex(tail))
    public.append(tail)
    if verb:
        pattern.append(re.escape(":" + verb))
        public.append(":" + verb)
    return re.compile("".join(pattern)), fields, "".join(public)


def _literal_regex(literal: str) -> str:
    # Literal segments may use '*' and '**' outside variables too (anonymous wildcards).
    return "/".join(_segment_regex(part) for part in literal.split("/"))


def _segment_regex(segment: str) -> str:
    if segment == "**":
        return ".+"
    if segment == "*":
        return "[^/]+"
    return re.escape(segment)


def _segments_regex(segments: str) -> str:
    return "/".join(_segment_regex(part) for part in segments.split("/"))


def _check_field_path(request: _descriptor.Descriptor, field_path: str, where: str) -> None:
    message: _descriptor.Descriptor | None = request
    for name in field_path.split("."):
        field = message.fields_by_name.get(name) if message is not None else None
        if field is None:
            raise ValueError(f"{where}: path variable {field_path!r} is not a request field")
        message = field.message_type


def _json_path(request: _descriptor.Descriptor, field_path: str) -> str:
    """``lease.lease_id`` → ``lease.leaseId`` (each segment by its JSON name)."""
    names: list[str] = []
    message: _descriptor.Descriptor | None = request
    for name in field_path.split("."):
        field = message.fields_by_name[name] if message is not None else None
        if field is None:  # pragma: no cover - _check_field_path ran first
            raise ValueError(field_path)
        names.append(field.json_name)
        message = field.message_type
    return ".".join(names)
