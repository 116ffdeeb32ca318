"""What ``--start`` puts where a cluster would have Secrets, Services and ports.

Secrets get local values (``DATABASE_URL`` a fresh database on the local PostgreSQL,
``REDIS_URL`` the local Redis, keys random, the TLS Secret a fresh CA and certificate in a
temporary folder standing for its mount path); in-cluster Service addresses become
``127.0.0.1``; and each containerPort is mapped to a free local port (this machine is shared:
the declared ports may be taken), consistently in the variables and the probes.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import os
import re
import secrets
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workcoord.kit.startup import free_port

from .common import CheckFailed, Doc, container_env, name_of, pod_spec, selected

SECRETS = "workcoord-secrets"
TLS_SECRET = "workcoord-tls"  # noqa: S105 - a Secret's name


def workcoord_command() -> list[str]:
    """How to run ``workcoord`` from this environment."""
    script = Path(sys.executable).with_name("workcoord")
    return [str(script)] if script.exists() else [sys.executable, "-m", "workcoord.cli.main"]


@dataclass
class LocalCluster:
    """What the check puts where a cluster would have Secrets, Services and ports."""

    source: str
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
def local_cluster(source: str, docs: list[Doc]) -> Iterator[LocalCluster]:
    """A fresh database, Secrets with local values and a certificate for the rendered
    Services; the database is dropped afterwards."""
    from sqlalchemy.engine import make_url

    name = f"workcoord_deploycheck_{source.replace('-', '_')}_{os.getpid()}"[:63]
    asyncio.run(_admin_sql(f'CREATE DATABASE "{name}"'))
    try:
        with tempfile.TemporaryDirectory(prefix=f"deploycheck-{source}-") as tmp:
            folder = Path(tmp)
            tls_dir = folder / "tls"
            _make_tls(tls_dir, [name_of(d) for d in docs if d["kind"] == "Service"])
            database_url = make_url(_admin_url()).set(database=name)
            redis_url = os.environ.get("WORKCOORD_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
            values = {
                "DATABASE_URL": database_url.render_as_string(hide_password=False),
                "REDIS_URL": redis_url,
                "WORKCOORD_SERVICE_KEY": "wcsvc_" + secrets.token_urlsafe(32),
                "WORKCOORD_BOOTSTRAP_ADMIN_TOKEN": "wcadm_" + secrets.token_urlsafe(32),
            }
            tls = {key: str(tls_dir / key) for key in ("tls.crt", "tls.key", "ca.crt")}
            cluster = LocalCluster(
                source, folder, name, {SECRETS: values, TLS_SECRET: tls}, tls_dir
            )
            _map_ports(cluster, docs)
            yield cluster
    finally:
        asyncio.run(_admin_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def _make_tls(folder: Path, services: list[str]) -> None:
    """A CA and one certificate for every Service name (server and client use), like the
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
    names = ["localhost", *services]
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
    for doc in (d for d in docs if d["kind"] == "Deployment"):
        for container in pod_spec(doc)["containers"]:
            for port in container.get("ports", []):
                cluster.ports[(name_of(doc), port["containerPort"])] = free_port()
    for service in (d for d in docs if d["kind"] == "Service"):
        [target] = selected(service, docs)
        by_name = {
            p.get("name"): p["containerPort"]
            for c in pod_spec(target)["containers"]
            for p in c.get("ports", [])
        }
        cluster.services[name_of(service)] = {
            p["port"]: (name_of(target), by_name.get(p["targetPort"], p["targetPort"]))
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
                "provide: teach scripts/deploy_check/local.py (and the runbook) about it"
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


def pod_environment(cluster: LocalCluster, doc: Doc, maps: dict[str, Doc]) -> dict[str, str]:
    """The environment the pod's container gets, with the local stand-ins."""
    workload = name_of(doc)
    spec = pod_spec(doc)
    [container] = spec["containers"]
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    mounts: dict[str, Path] = {}
    for mount in container.get("volumeMounts", []):
        volume = volumes[mount["name"]]
        if "secret" in volume:
            secret = volume["secret"]
            if secret["secretName"] == TLS_SECRET:
                mounts[mount["mountPath"]] = cluster.tls_dir
            elif secret.get("optional"):
                # An optional Secret that is not there mounts as an empty directory.
                empty = cluster.folder / "optional-secrets" / workload / mount["name"]
                empty.mkdir(parents=True, exist_ok=True)
                mounts[mount["mountPath"]] = empty
            else:
                raise CheckFailed(f"{workload}: the check cannot provide {secret}")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(cluster.folder),
        "PYTHONUNBUFFERED": "1",
    }
    for name, value in container_env(container, maps).items():
        resolved = _resolve_value(cluster, workload, mounts, name, value)
        if resolved is not None:
            env[name] = resolved
    return env
