"""``--start``: run what a source's pods run — the migration Job's command, then each
Deployment's container command with its environment — and require each service to answer its
startup, readiness and liveness probes as declared (gRPC health, or HTTP(S) GET), to listen on
all interfaces (0.0.0.0 or ::) on every containerPort, and to exit 0 on SIGTERM. Processes run
as the current user, without the read-only root filesystem; local.py says what else differs
from a cluster."""

from __future__ import annotations

import contextlib
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from .common import (
    START_ORDER,
    CheckFailed,
    Doc,
    component_of,
    configmaps,
    name_of,
    pod_spec,
    probe_port,
)
from .local import LocalCluster, local_cluster, pod_environment, workcoord_command

# Generous: the machine may be busy, and a pod's probes would simply wait longer too.
START_LIMIT_SECONDS = 240.0
STOP_LIMIT_SECONDS = 30.0


@dataclass
class Pod:
    """One started service."""

    name: str
    doc: Doc
    process: subprocess.Popen[bytes]
    log: Path

    def tail(self) -> str:
        """The end of its output."""
        return self.log.read_text(errors="replace")[-4000:]


def _probe(cluster: LocalCluster, pod: Pod, probe: Doc) -> bool:
    container = pod_spec(pod.doc)["containers"][0]
    by_name = {p.get("name"): p["containerPort"] for p in container.get("ports", [])}
    port = probe_port(probe)
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
    probe = pod_spec(pod.doc)["containers"][0][kind]
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


def _run_jobs(cluster: LocalCluster, docs: list[Doc]) -> None:
    maps = configmaps(docs)
    for job in (d for d in docs if d["kind"] == "Job"):
        [container] = pod_spec(job)["containers"]
        result = subprocess.run(  # noqa: S603
            [*workcoord_command(), *container["args"]],
            env=pod_environment(cluster, job, maps),
            capture_output=True,
            text=True,
            timeout=START_LIMIT_SECONDS,
            check=False,
        )
        if result.returncode != 0:
            raise CheckFailed(f"Job {name_of(job)} failed:\n{result.stderr}")


def start_source(source: str, docs: list[Doc]) -> list[str]:
    """Run the source's Jobs, then start, probe and stop its Deployments; the problems."""
    maps = configmaps(docs)
    started = time.monotonic()
    with local_cluster(source, docs) as cluster:
        _run_jobs(cluster, docs)
        deployments = sorted(
            (d for d in docs if d["kind"] == "Deployment"),
            key=lambda d: START_ORDER.index(component_of(d)),
        )
        pods: list[Pod] = []
        try:
            for doc in deployments:
                name = name_of(doc)
                log = cluster.folder / f"{name}.log"
                with log.open("wb") as out:
                    process = subprocess.Popen(  # noqa: S603
                        [*workcoord_command(), *pod_spec(doc)["containers"][0]["args"]],
                        env=pod_environment(cluster, doc, maps),
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
                print(f"check_deploy: {source}: {name} answers its probes", flush=True)
        finally:
            problems = _stop(pods)
        if problems:
            raise CheckFailed("; ".join(problems))
    print(
        f"check_deploy: {source}: {len(pods)} services started, probed and stopped "
        f"in {time.monotonic() - started:.0f}s",
        flush=True,
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
