"""Settings, ports and the Ingress, against what the services read.

**Settings**: every variable a container gets must be one its command reads (the pydantic
settings of ``serve coordinator|recovery|gateway``; ``DATABASE_URL`` for ``db upgrade``); a
shared ConfigMap's keys must each be read by some service. An unknown ``WORKCOORD_*`` fails.
**Ports**: each listen address binds all interfaces on a declared containerPort, probes and
Services name ports that exist, the metrics port is the declared ``metrics`` port.
**Ingress**: it routes the feed and MCP to the gateway over TLS, with nginx timeouts above the
longest wait the API allows and the feed's ping interval, and the gateway's own body limit.
"""

from __future__ import annotations

import re
from typing import Any

from .common import (
    CheckFailed,
    Doc,
    component_of,
    configmaps,
    container_env,
    name_of,
    pod_spec,
    probe_port,
    selected,
    workloads,
)

NGINX = "nginx.ingress.kubernetes.io/"
# Paths that hold a request open: the live feed (WebSocket) and MCP (streamed answers).
HELD_PATHS = ("/v1/work-coordinators/example/ws", "/mcp")
# Seconds of slack above the longest silence a held request may have.
TIMEOUT_MARGIN_SECONDS = 10.0


def settings_reads() -> dict[tuple[str, ...], set[str]]:
    """The variables each container command reads."""
    from workcoord.kit.settings import (
        CoordinatorSettings,
        GatewaySettings,
        RecoverySettings,
        env_name,
    )

    def names(cls: Any) -> set[str]:
        return {env_name(cls, f) for f in cls.model_fields}

    return {
        ("serve", "coordinator"): names(CoordinatorSettings),
        ("serve", "recovery"): names(RecoverySettings),
        ("serve", "gateway"): names(GatewaySettings),
        ("db", "upgrade"): {"DATABASE_URL"},
    }


def _governed(name: str) -> bool:
    return name.startswith("WORKCOORD_") or name in ("DATABASE_URL", "REDIS_URL")


def check_settings(docs: list[Doc], source: str) -> list[str]:
    """Variables set that no command reads, and ConfigMap keys no service reads."""
    reads = settings_reads()
    everything = set().union(*(v for k, v in reads.items() if k[0] == "serve"))
    maps = configmaps(docs)
    problems: list[str] = []
    shared: set[str] = set()
    for doc in workloads(docs):
        for container in pod_spec(doc)["containers"]:
            where = f"{source}: {name_of(doc)}/{container['name']}"
            command = tuple(container.get("args", []))
            known = reads.get(command)
            if known is None:
                problems.append(f"{where}: unknown command {list(command)}")
                continue
            for entry in container.get("env", []):
                name = entry["name"]
                if _governed(name) and name not in known:
                    problems.append(
                        f"{where}: sets {name}, which `{' '.join(command)}` never reads"
                    )
                elif not _governed(name) and not name.startswith("OTEL_"):
                    problems.append(f"{where}: sets {name}, which no workcoord service reads")
            for source_ref in container.get("envFrom", []):
                ref = source_ref.get("configMapRef", {}).get("name")
                if ref is not None:
                    if ref not in maps:
                        problems.append(f"{where}: ConfigMap {ref} is not rendered")
                    shared.add(ref)
    for ref in sorted(shared):
        for name in (maps.get(ref) or {}).get("data", {}):
            unread = name not in everything if _governed(name) else not name.startswith("OTEL_")
            if unread:
                problems.append(f"{source}: ConfigMap {ref}: {name} is read by no service")
    return problems


def check_ports(docs: list[Doc], source: str) -> list[str]:
    """Listen addresses, probes, the metrics port and Service target ports."""
    maps = configmaps(docs)
    problems: list[str] = []
    for doc in (d for d in docs if d["kind"] == "Deployment"):
        for container in pod_spec(doc)["containers"]:
            problems += _check_container_ports(container, maps, f"{source}: {name_of(doc)}")
    for doc in (d for d in docs if d["kind"] == "Service"):
        declared = {
            key
            for d in selected(doc, docs)
            for c in pod_spec(d)["containers"]
            for p in c.get("ports", [])
            for key in (p["containerPort"], p.get("name"))
        }
        for port in doc["spec"]["ports"]:
            if port["targetPort"] not in declared:
                problems.append(
                    f"{source}: Service {name_of(doc)}: targetPort "
                    f"{port['targetPort']!r} matches no container port"
                )
    return problems


def _check_container_ports(container: Doc, maps: dict[str, Doc], workload: str) -> list[str]:
    where = f"{workload}/{container['name']}"
    problems: list[str] = []
    ports = {p["containerPort"]: p.get("name") for p in container.get("ports", [])}
    names = {v: k for k, v in ports.items() if v}
    for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
        probe = container.get(kind)
        if probe is None:
            problems.append(f"{where}: has no {kind}")
            continue
        port = probe_port(probe)
        if port not in ports and port not in names:
            problems.append(f"{where}: {kind} probes port {port!r}, which is not declared")
    if not container.get("resources", {}).get("requests"):
        problems.append(f"{where}: has no resource requests")
    env = container_env(container, maps)
    service = tuple(container.get("args", []))[-1]
    listen = env.get(f"WORKCOORD_LISTEN_{service.upper()}")
    if not isinstance(listen, str):
        problems.append(f"{where}: WORKCOORD_LISTEN_{service.upper()} is not set")
    else:
        host, _, port_text = listen.rpartition(":")
        if host.strip("[]") not in ("0.0.0.0", "::"):  # noqa: S104
            problems.append(f"{where}: listens on {listen}, not on all interfaces")
        if int(port_text) not in ports:
            problems.append(f"{where}: listens on port {port_text}, not a containerPort")
    metrics_port = env.get("WORKCOORD_METRICS_PORT")
    if metrics_port is None or names.get("metrics") != int(metrics_port):
        problems.append(f"{where}: WORKCOORD_METRICS_PORT is not the `metrics` port")
    return problems


# --------------------------------------------------------------------------- the Ingress


def _setting(docs: list[Doc], component: str, field: str) -> Any:
    """A setting as the component's pods get it: their variable, else the settings' default."""
    from workcoord.kit.settings import CoordinatorSettings, GatewaySettings, env_name

    cls = GatewaySettings if component == "gateway" else CoordinatorSettings
    maps = configmaps(docs)
    for doc in docs:
        if doc["kind"] == "Deployment" and component_of(doc) == component:
            value = container_env(pod_spec(doc)["containers"][0], maps).get(env_name(cls, field))
            if isinstance(value, str) and value:
                return value
    return cls.model_fields[field].default


def _long_poll_max_seconds() -> int:
    """The longest ``wait_seconds`` a Lease call may ask for (the API's own rule)."""
    from workcoord.api.v1 import worker_pb2
    from workcoord.kit.descriptors import descriptor_of, field_named
    from workcoord.kit.json_schema import field_rules

    wait = field_named(descriptor_of(worker_pb2.LeaseRequest()), "wait_seconds")
    if wait is None:
        raise CheckFailed("LeaseRequest has no wait_seconds: update scripts/deploy_check")
    return int(field_rules(wait).max)


def required_proxy_timeout(docs: list[Doc]) -> float:
    """The least nginx read/send timeout: a long-poll's whole deadline (the gateway's request
    timeout plus the longest wait) and the feed's ping interval, plus a margin."""
    request_timeout = float(_setting(docs, "gateway", "request_timeout_seconds"))
    ping = float(_setting(docs, "coordinator", "feed_ping_seconds"))
    return max(request_timeout + _long_poll_max_seconds(), ping) + TIMEOUT_MARGIN_SECONDS


def nginx_size(text: str) -> int:
    """Bytes in an nginx size (``1048576``, ``512k``, ``1m``, ``1g``)."""
    match = re.fullmatch(r"(\d+)([kKmMgG]?)", text.strip())
    if match is None:
        raise ValueError(f"not an nginx size: {text!r}")
    power = " kmg".index(match[2].lower() or " ")
    return int(match[1]) * int(1024**power)


def _routes(path: Doc, sample: str) -> bool:
    if path.get("pathType") == "Exact":
        return bool(path.get("path") == sample)
    prefix = str(path.get("path", "/")).rstrip("/")
    return sample == prefix or sample.startswith(prefix + "/")


def check_ingress(docs: list[Doc], source: str) -> list[str]:
    """Each Ingress against the gateway's settings (see the module's docstring)."""
    problems: list[str] = []
    for doc in (d for d in docs if d["kind"] == "Ingress"):
        where = f"{source}: Ingress {name_of(doc)}"
        problems += [f"{where}: {p}" for p in _check_one_ingress(doc, docs)]
    return problems


def _check_one_ingress(doc: Doc, docs: list[Doc]) -> list[str]:
    problems: list[str] = []
    annotations = doc["metadata"].get("annotations") or {}
    services = {name_of(d): d for d in docs if d["kind"] == "Service"}
    tls_hosts = {h for entry in doc["spec"].get("tls") or [] for h in entry.get("hosts") or []}
    for rule in doc["spec"].get("rules") or []:
        host = rule.get("host")
        if host not in tls_hosts:
            problems.append(f"host {host!r} has no TLS entry")
        for sample in HELD_PATHS:
            routes = [p for p in rule.get("http", {}).get("paths", []) if _routes(p, sample)]
            if not routes:
                problems.append(f"{host}: {sample} is not routed")
                continue
            backend = routes[0]["backend"]["service"]
            service = services.get(backend["name"])
            targets = selected(service, docs) if service else []
            if not targets or any(component_of(t) != "gateway" for t in targets):
                problems.append(f"{host}: {sample} goes to {backend['name']}, not the gateway")
            elif not any(
                backend["port"].get("name") == p.get("name")
                or backend["port"].get("number") == p["port"]
                for p in service["spec"]["ports"]  # type: ignore[index]
            ):
                problems.append(
                    f"{host}: {sample}: {backend['name']} has no port {backend['port']}"
                )
            elif backend["port"].get("name") == "metrics" or backend["port"].get("number") == 9464:
                problems.append(f"{host}: {sample} goes to the metrics port")
    least = required_proxy_timeout(docs)
    for key in ("proxy-read-timeout", "proxy-send-timeout"):
        value = annotations.get(NGINX + key)
        if value is None or not str(value).isdigit() or int(value) < least:
            problems.append(f"{NGINX}{key} is {value!r}: it must be at least {least:.0f} seconds")
    limit = int(_setting(docs, "gateway", "max_body_bytes"))
    body = annotations.get(NGINX + "proxy-body-size")
    try:
        if body is None or nginx_size(str(body)) != limit:
            problems.append(f"{NGINX}proxy-body-size is {body!r}, not the gateway's {limit}")
    except ValueError as exc:
        problems.append(f"{NGINX}proxy-body-size: {exc}")
    if str(annotations.get(NGINX + "proxy-buffering", "on")) != "off":
        problems.append(f"{NGINX}proxy-buffering must be off (MCP and feeds stream)")
    gateway_tls = _setting(docs, "gateway", "tls_cert_file") is not None
    protocol = str(annotations.get(NGINX + "backend-protocol", "HTTP"))
    if protocol != ("HTTPS" if gateway_tls else "HTTP"):
        problems.append(
            f"{NGINX}backend-protocol is {protocol}, but the gateway serves "
            f"{'HTTPS' if gateway_tls else 'HTTP'}"
        )
    return problems
