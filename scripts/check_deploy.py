"""Checks of the Kubernetes manifests in ``deploy/k8s``, up to starting each service as its pod
would. No cluster is needed.

Usage: ``uv run python scripts/check_deploy.py [--start] [--overlay NAME]…``

1. **Render** the base and every overlay with ``kubectl kustomize`` (``scripts/install-kubectl``
   provides kubectl when none is installed).
2. **Validate** every object against the Kubernetes OpenAPI schemas, offline and strict (unknown
   fields fail), with kubernetes-validate; the Prometheus Operator objects (ServiceMonitor,
   PrometheusRule) against the fields they use here; and every metric that an alert rule or
   the Grafana dashboard names must be one the code exports.
3. **Settings**: every variable a container gets must be one its command reads (the pydantic
   settings of ``serve coordinator|recovery|gateway``; ``DATABASE_URL`` for ``db upgrade``); a
   shared ConfigMap's keys must each be read by some service. An unknown ``WORKCOORD_*`` fails.
   **Ports**: each listen address binds all interfaces on a declared containerPort, probes
   and Services name ports that exist, the metrics port is the declared ``metrics`` port.
4. ``--start``: for each overlay, run what its pods run — the migration Job's command, then each
   Deployment's container command with its environment — and require each service to answer
   its startup, readiness and liveness probes as declared (gRPC health, or HTTP(S) GET), to
   listen on all interfaces (0.0.0.0 or ::) on every containerPort, and to exit 0 on SIGTERM.
   What differs from a cluster, and only that: Secrets get local values (``DATABASE_URL`` a fresh
   database on the local PostgreSQL, ``REDIS_URL`` the local Redis, keys random, the TLS Secret
   a fresh CA and certificate in a temporary folder standing for its mount path); in-cluster
   Service addresses become ``127.0.0.1``; and each containerPort is mapped to a free local port
   (this machine is shared: the declared ports may be taken), consistently in the variables and
   the probes. Processes run as the current user, without the read-only root filesystem.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import ipaddress
import json
import os
import re
import secrets
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]

from workcoord.kit.startup import free_port

ROOT = Path(__file__).resolve().parent.parent
K8S = ROOT / "deploy" / "k8s"
LOCAL_KUBECTL = ROOT / ".build" / "tools" / "kubectl"
START_ORDER = ("workcoord-coordinator", "workcoord-recovery", "workcoord-gateway")
# Generous: the machine may be busy, and a pod's probes would simply wait longer too.
START_LIMIT_SECONDS = 240.0
STOP_LIMIT_SECONDS = 30.0
PROMETHEUS_KINDS = ("ServiceMonitor", "PrometheusRule")
KUBERNETES_VERSION = "1.30"  # the oldest version the manifests target (native gRPC probes: 1.27)

Doc = dict[str, Any]


class CheckFailed(Exception):
    """One line saying what is wrong."""


# --------------------------------------------------------------------------- rendering


def kubectl() -> str:
    found = shutil.which("kubectl") or (str(LOCAL_KUBECTL) if LOCAL_KUBECTL.is_file() else None)
    if found is None:
        raise CheckFailed("kubectl not found: run scripts/install-kubectl (or install kubectl)")
    return found


def render(target: Path) -> list[Doc]:
    result = subprocess.run(  # noqa: S603 - fixed program
        [kubectl(), "kustomize", str(target)], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise CheckFailed(f"kustomize {target.relative_to(ROOT)}: {result.stderr.strip()}")
    return [d for d in yaml.safe_load_all(result.stdout) if d]


def targets(names: list[str]) -> list[Path]:
    overlays = sorted(p for p in (K8S / "overlays").iterdir() if p.is_dir())
    if names:
        overlays = [p for p in overlays if p.name in names]
    return overlays


# --------------------------------------------------------------------------- schemas


def check_schemas(docs: list[Doc], source: str) -> list[str]:
    import kubernetes_validate  # type: ignore[import-untyped]

    problems = []
    for doc in docs:
        where = f"{source}: {doc.get('kind')}/{doc.get('metadata', {}).get('name')}"
        if doc.get("kind") in PROMETHEUS_KINDS:
            problems += [f"{where}: {p}" for p in _check_prometheus_object(doc, docs)]
            continue
        try:
            kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            path = ".".join(str(p) for p in exc.path)
            problems.append(f"{where}: {path}: {exc.message}")
        except kubernetes_validate.SchemaNotFoundError:
            problems.append(f"{where}: no schema for this kind in Kubernetes {KUBERNETES_VERSION}")
    return problems


def _check_prometheus_object(doc: Doc, docs: list[Doc]) -> list[str]:
    spec = doc.get("spec") or {}
    if doc["apiVersion"] != "monitoring.coreos.com/v1":
        return [f"apiVersion must be monitoring.coreos.com/v1, not {doc['apiVersion']}"]
    if doc["kind"] == "ServiceMonitor":
        wanted = (spec.get("selector") or {}).get("matchLabels") or {}
        services = [
            d
            for d in docs
            if d["kind"] == "Service"
            and wanted.items() <= (d["metadata"].get("labels") or {}).items()
        ]
        if not services:
            return ["its selector matches no Service"]
        problems = []
        for endpoint in spec.get("endpoints") or []:
            port = endpoint.get("port")
            missing = [
                s["metadata"]["name"]
                for s in services
                if port not in {p.get("name") for p in s["spec"]["ports"]}
            ]
            if missing:
                problems.append(f"Services {missing} have no port named {port!r}")
        return problems or ([] if spec.get("endpoints") else ["no endpoints"])
    problems = []
    for group in spec.get("groups") or []:
        for rule in group.get("rules") or []:
            name = rule.get("alert") or rule.get("record") or "?"
            unknown = set(rule) - {"alert", "record", "expr", "for", "labels", "annotations"}
            if unknown or "expr" not in rule:
                problems.append(f"rule {name}: unknown fields {sorted(unknown)} or no expr")
            if "alert" in rule and (rule.get("labels") or {}).get("severity") not in (
                "critical",
                "warning",
            ):
                problems.append(f"alert {name}: severity must be critical or warning")
            if "alert" in rule and not (rule.get("annotations") or {}).get("summary"):
                problems.append(f"alert {name}: no summary annotation")
    return problems


def exported_metrics() -> set[str]:
    """Every sample name the services can export (importing their metric modules)."""
    import importlib

    from prometheus_client import REGISTRY

    for module in (
        "workcoord.kit.metrics",
        "workcoord.coordinator.metrics",
        "workcoord.recovery.metrics",
        "workcoord.gateway.metrics",
    ):
        importlib.import_module(module)
    suffixes = {
        "counter": ("_total", "_created"),
        "histogram": ("_bucket", "_count", "_sum", "_created"),
        "summary": ("_count", "_sum", "_created"),
    }
    names = set()
    for family in REGISTRY.collect():
        names.add(family.name)
        names.update(family.name + suffix for suffix in suffixes.get(family.type, ()))
    return names


def check_metric_names(docs: list[Doc], source: str, dashboards: list[Path]) -> list[str]:
    expressions: list[tuple[str, str]] = []
    for doc in docs:
        if doc.get("kind") == "PrometheusRule":
            for group in doc["spec"]["groups"]:
                for rule in group["rules"]:
                    expressions.append((f"alert {rule.get('alert')}", rule["expr"]))
    for path in dashboards:
        for panel in json.loads(path.read_text())["panels"]:
            for target in panel.get("targets", []):
                expressions.append((f"{path.name}: {panel['title']}", target["expr"]))
    known = exported_metrics()
    problems = []
    for where, expression in expressions:
        for name in sorted(set(re.findall(r"\bworkcoord_[a-z0-9_]+", expression))):
            if name not in known:
                problems.append(f"{source}: {where}: no metric named {name}")
    return problems


# --------------------------------------------------------------------------- settings and ports


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


def _pod_spec(doc: Doc) -> Doc:
    return dict(doc["spec"]["template"]["spec"])


def workloads(docs: list[Doc]) -> list[Doc]:
    return [d for d in docs if d["kind"] in ("Deployment", "Job")]


def check_settings(docs: list[Doc], source: str) -> list[str]:
    reads = settings_reads()
    everything = set().union(*(v for k, v in reads.items() if k[0] == "serve"))
    configmaps = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ConfigMap"}
    problems: list[str] = []
    shared: set[str] = set()
    for doc in workloads(docs):
        for container in _pod_spec(doc)["containers"]:
            where = f"{source}: {doc['metadata']['name']}/{container['name']}"
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
                    if ref not in configmaps:
                        problems.append(f"{where}: ConfigMap {ref} is not rendered")
                    shared.add(ref)
    for ref in sorted(shared):
        for name in (configmaps.get(ref) or {}).get("data", {}):
            unread = name not in everything if _governed(name) else not name.startswith("OTEL_")
            if unread:
                problems.append(f"{source}: ConfigMap {ref}: {name} is read by no service")
    return problems


def _container_env(container: Doc, configmaps: dict[str, Doc]) -> dict[str, Any]:
    """Literal values only (secret references as their dicts), envFrom first, env over it."""
    env: dict[str, Any] = {}
    for source_ref in container.get("envFrom", []):
        ref = source_ref.get("configMapRef", {}).get("name")
        if ref in configmaps:
            env.update(configmaps[ref].get("data", {}))
    for entry in container.get("env", []):
        env[entry["name"]] = entry.get("value", entry.get("valueFrom"))
    return env


def _probe_port(probe: Doc) -> Any:
    handler = probe.get("grpc") or probe.get("httpGet") or probe.get("tcpSocket") or {}
    return handler.get("port")


def check_ports(docs: list[Doc], source: str) -> list[str]:
    configmaps = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ConfigMap"}
    problems: list[str] = []
    deployments = [d for d in docs if d["kind"] == "Deployment"]
    for doc in deployments:
        name = doc["metadata"]["name"]
        for container in _pod_spec(doc)["containers"]:
            where = f"{source}: {name}/{container['name']}"
            ports = {p["containerPort"]: p.get("name") for p in container.get("ports", [])}
            names = {v: k for k, v in ports.items() if v}
            for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
                probe = container.get(kind)
                if probe is None:
                    problems.append(f"{where}: has no {kind}")
                    continue
                port = _probe_port(probe)
                if port not in ports and port not in names:
                    problems.append(f"{where}: {kind} probes port {port!r}, which is not declared")
            if not container.get("resources", {}).get("requests"):
                problems.append(f"{where}: has no resource requests")
            env = _container_env(container, configmaps)
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
    for doc in (d for d in docs if d["kind"] == "Service"):
        selected = [
            d
            for d in deployments
            if doc["spec"]["selector"].items()
            <= d["spec"]["template"]["metadata"]["labels"].items()
        ]
        declared = {
            key
            for d in selected
            for c in _pod_spec(d)["containers"]
            for p in c.get("ports", [])
            for key in (p["containerPort"], p.get("name"))
        }
        for port in doc["spec"]["ports"]:
            if port["targetPort"] not in declared:
                problems.append(
                    f"{source}: Service {doc['metadata']['name']}: targetPort "
                    f"{port['targetPort']!r} matches no container port"
                )
    return problems


# --------------------------------------------------------------------------- starting the pods


def workcoord_command() -> list[str]:
    script = Path(sys.executable).with_name("workcoord")
    return [str(script)] if script.exists() else [sys.executable, "-m", "workcoord.cli.main"]


@dataclass
class LocalCluster:
    """What the check puts where a cluster would have Secrets, Services and ports."""

    overlay: str
    folder: Path
    database_name: str
    secrets: dict[str, dict[str, str]]
    tls_dir: Path
    ports: dict[tuple[str, int], int] = field(default_factory=dict)  # (deployment, port) → local
    services: dict[str, dict[int, tuple[str, int]]] = field(default_factory=dict)


def _admin_url() -> str:
    return os.environ.get(
        "WORKCOORD_TEST_DATABASE_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres"
    )


async def _admin_sql(statement: str) -> None:
    import asyncpg
    from sqlalchemy.engine import make_url

    dsn = make_url(_admin_url()).set(drivername="postgresql").render_as_string(hide_password=False)
    connection = await asyncpg.connect(dsn)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


@contextlib.contextmanager
def local_cluster(overlay: str) -> Iterator[LocalCluster]:
    from sqlalchemy.engine import make_url

    name = f"workcoord_deploycheck_{overlay}_{os.getpid()}"[:63]
    asyncio.run(_admin_sql(f'CREATE DATABASE "{name}"'))
    try:
        with tempfile.TemporaryDirectory(prefix=f"deploycheck-{overlay}-") as tmp:
            folder = Path(tmp)
            tls_dir = folder / "tls"
            _make_tls(tls_dir)
            database_url = make_url(_admin_url()).set(database=name)
            redis_url = os.environ.get("WORKCOORD_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
            values = {
                "DATABASE_URL": database_url.render_as_string(hide_password=False),
                "REDIS_URL": redis_url,
                "WORKCOORD_SERVICE_KEY": "wcsvc_" + secrets.token_urlsafe(32),
                "WORKCOORD_BOOTSTRAP_ADMIN_TOKEN": "wcadm_" + secrets.token_urlsafe(32),
            }
            tls = {key: str(tls_dir / key) for key in ("tls.crt", "tls.key", "ca.crt")}
            yield LocalCluster(
                overlay,
                folder,
                name,
                {"workcoord-secrets": values, "workcoord-tls": tls},
                tls_dir,
            )
    finally:
        asyncio.run(_admin_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def _make_tls(folder: Path) -> None:
    """A CA and one certificate for every service name (server and client use), like the
    runbook's: the services present it to each other (mutual TLS)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    folder.mkdir(mode=0o700)
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "workcoord check CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names = ["localhost", *START_ORDER]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "workcoord")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName(n) for n in names]
                + [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    (folder / "ca.crt").write_bytes(ca.public_bytes(pem))
    (folder / "tls.crt").write_bytes(cert.public_bytes(pem))
    (folder / "tls.key").write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )


def _map_ports(cluster: LocalCluster, docs: list[Doc]) -> None:
    deployments = [d for d in docs if d["kind"] == "Deployment"]
    for doc in deployments:
        for container in _pod_spec(doc)["containers"]:
            for port in container.get("ports", []):
                cluster.ports[(doc["metadata"]["name"], port["containerPort"])] = free_port()
    for service in (d for d in docs if d["kind"] == "Service"):
        [target] = [
            d
            for d in deployments
            if service["spec"]["selector"].items()
            <= d["spec"]["template"]["metadata"]["labels"].items()
        ]
        by_name = {
            p.get("name"): p["containerPort"]
            for c in _pod_spec(target)["containers"]
            for p in c.get("ports", [])
        }
        cluster.services[service["metadata"]["name"]] = {
            p["port"]: (
                target["metadata"]["name"],
                by_name.get(p["targetPort"], p["targetPort"]),
            )
            for p in service["spec"]["ports"]
        }


def _resolve_value(
    cluster: LocalCluster, workload: str, mounts: dict[str, Path], name: str, value: Any
) -> str | None:
    if isinstance(value, dict):  # valueFrom
        ref = value.get("secretKeyRef")
        if ref is None:
            raise CheckFailed(f"{workload}: {name}: only secretKeyRef is supported by the check")
        found = cluster.secrets.get(ref["name"], {}).get(ref["key"])
        if found is None and not ref.get("optional"):
            raise CheckFailed(
                f"{workload}: {name} needs {ref['name']}/{ref['key']}, which the check does not "
                "provide: teach scripts/check_deploy.py (and the runbook) about it"
            )
        return found
    text = str(value)
    for mount_path, local in mounts.items():
        if text.startswith(mount_path + "/"):
            return str(local / text.removeprefix(mount_path + "/"))
    match = re.fullmatch(r"(?P<host>\[[^\]]+\]|[^:/]+):(?P<port>\d+)", text)
    if match:
        host, port = match["host"], int(match["port"])
        if (workload, port) in cluster.ports and host.strip("[]") in ("0.0.0.0", "::"):  # noqa: S104
            return f"{host}:{cluster.ports[(workload, port)]}"
        service = cluster.services.get(host.split(".")[0])
        if service is not None and port in service:
            target, container_port = service[port]
            return f"127.0.0.1:{cluster.ports[(target, container_port)]}"
    if name.endswith("_PORT") and text.isdigit() and (workload, int(text)) in cluster.ports:
        return str(cluster.ports[(workload, int(text))])
    return text


def pod_environment(cluster: LocalCluster, doc: Doc, configmaps: dict[str, Doc]) -> dict[str, str]:
    workload = doc["metadata"]["name"]
    spec = _pod_spec(doc)
    [container] = spec["containers"]
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    mounts: dict[str, Path] = {}
    for mount in container.get("volumeMounts", []):
        volume = volumes[mount["name"]]
        if "secret" in volume:
            if volume["secret"]["secretName"] != "workcoord-tls":
                raise CheckFailed(f"{workload}: the check cannot provide {volume['secret']}")
            mounts[mount["mountPath"]] = cluster.tls_dir
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(cluster.folder),
        "PYTHONUNBUFFERED": "1",
    }
    for name, value in _container_env(container, configmaps).items():
        resolved = _resolve_value(cluster, workload, mounts, name, value)
        if resolved is not None:
            env[name] = resolved
    return env


@dataclass
class Pod:
    name: str
    doc: Doc
    process: subprocess.Popen[bytes]
    log: Path

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


def _probe(cluster: LocalCluster, pod: Pod, probe: Doc) -> bool:
    container = _pod_spec(pod.doc)["containers"][0]
    by_name = {p.get("name"): p["containerPort"] for p in container.get("ports", [])}
    port = _probe_port(probe)
    container_port = by_name.get(port, port)
    local = cluster.ports[(pod.name, int(container_port))]
    if "grpc" in probe:
        return _grpc_serving(local, probe["grpc"].get("service", ""))
    if "httpGet" in probe:
        handler = probe["httpGet"]
        scheme = handler.get("scheme", "HTTP").lower()
        url = f"{scheme}://127.0.0.1:{local}{handler.get('path', '/')}"
        # Like kubelet: HTTPS without verifying the certificate; 200-399 is success.
        context = ssl._create_unverified_context() if scheme == "https" else None  # noqa: S323
        try:
            with urllib.request.urlopen(url, timeout=3, context=context) as answer:  # noqa: S310
                return 200 <= int(answer.status) < 400
        except (urllib.error.URLError, OSError):
            return False
    raise CheckFailed(f"{pod.name}: the check knows gRPC and httpGet probes only: {probe}")


def _grpc_serving(port: int, service: str) -> bool:
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    # kubelet's gRPC probe is plaintext, as this is.
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=3
            )
        except grpc.RpcError:
            return False
    return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


def _wait_probe(cluster: LocalCluster, pod: Pod, kind: str) -> None:
    probe = _pod_spec(pod.doc)["containers"][0][kind]
    deadline = time.monotonic() + START_LIMIT_SECONDS
    while not _probe(cluster, pod, probe):
        if pod.process.poll() is not None:
            raise CheckFailed(f"{pod.name} exited with {pod.process.returncode}:\n{pod.tail()}")
        if time.monotonic() > deadline:
            raise CheckFailed(f"{pod.name}: {kind} did not succeed:\n{pod.tail()}")
        time.sleep(0.5)


def _listening_everywhere(port: int) -> bool:
    """Whether a LISTEN socket on ``port`` is bound to the wildcard address (IPv4 or IPv6)."""
    for table, wildcard in (("/proc/net/tcp", "00000000"), ("/proc/net/tcp6", "0" * 32)):
        with contextlib.suppress(FileNotFoundError), open(table) as rows:
            for row in list(rows)[1:]:
                local, state = row.split()[1], row.split()[3]
                address, _, port_hex = local.partition(":")
                if state == "0A" and int(port_hex, 16) == port and address == wildcard:
                    return True
    return False


def start_overlay(target: Path) -> list[str]:
    docs = render(target)
    configmaps = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ConfigMap"}
    started = time.monotonic()
    with local_cluster(target.name) as cluster:
        _map_ports(cluster, docs)
        for job in (d for d in docs if d["kind"] == "Job"):
            [container] = _pod_spec(job)["containers"]
            result = subprocess.run(  # noqa: S603
                [*workcoord_command(), *container["args"]],
                env=pod_environment(cluster, job, configmaps),
                capture_output=True,
                text=True,
                timeout=START_LIMIT_SECONDS,
                check=False,
            )
            if result.returncode != 0:
                raise CheckFailed(f"Job {job['metadata']['name']} failed:\n{result.stderr}")
        deployments = sorted(
            (d for d in docs if d["kind"] == "Deployment"),
            key=lambda d: START_ORDER.index(d["metadata"]["name"]),
        )
        pods: list[Pod] = []
        try:
            for doc in deployments:
                name = doc["metadata"]["name"]
                log = cluster.folder / f"{name}.log"
                with log.open("wb") as out:
                    process = subprocess.Popen(  # noqa: S603
                        [*workcoord_command(), *_pod_spec(doc)["containers"][0]["args"]],
                        env=pod_environment(cluster, doc, configmaps),
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL,
                        cwd=cluster.folder,
                    )
                pod = Pod(name, doc, process, log)
                pods.append(pod)
                for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
                    _wait_probe(cluster, pod, kind)
                for (owner, _declared), local in cluster.ports.items():
                    if owner == name and not _listening_everywhere(local):
                        raise CheckFailed(f"{name}: port {local} is not bound on all interfaces")
                print(f"check_deploy: {target.name}: {name} answers its probes", flush=True)
        finally:
            problems = _stop(pods)
        if problems:
            raise CheckFailed("; ".join(problems))
    print(
        f"check_deploy: {target.name}: {len(pods)} services started, probed and stopped "
        f"in {time.monotonic() - started:.0f}s"
    )
    return []


def _stop(pods: list[Pod]) -> list[str]:
    problems = []
    for pod in reversed(pods):
        if pod.process.poll() is None:
            pod.process.send_signal(signal.SIGTERM)
        try:
            code = pod.process.wait(STOP_LIMIT_SECONDS)
        except subprocess.TimeoutExpired:
            pod.process.kill()
            pod.process.wait()
            code = -9
        if code != 0:
            problems.append(f"{pod.name} exited with {code} on SIGTERM:\n{pod.tail()}")
    return problems


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--start", action="store_true", help="also start each overlay's pods")
    parser.add_argument("--overlay", action="append", default=[], help="only these overlays")
    args = parser.parse_args(argv)
    problems: list[str] = []
    try:
        for target in [K8S / "base", *targets(args.overlay)]:
            source = f"kustomize {target.relative_to(ROOT)}"
            docs = render(target)
            problems += check_schemas(docs, source)
            problems += check_settings(docs, source)
            problems += check_ports(docs, source)
            problems += check_metric_names(docs, source, sorted(target.rglob("*.json")))
            print(f"check_deploy: {source}: {len(docs)} objects rendered and checked", flush=True)
        if args.start and not problems:
            for target in targets(args.overlay):
                problems += start_overlay(target)
    except CheckFailed as exc:
        problems.append(str(exc))
    for problem in problems:
        print(f"check_deploy: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
