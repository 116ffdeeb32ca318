"""``workcoord worker``: the calls of a scripted worker, one command per call.

A shell script leases, starts, heartbeats and completes through these commands. The lease
token is a secret: pass it in ``WORKCOORD_LEASE_TOKEN`` (or ``--lease-token-file``) rather than
on the command line, where other local users can read it.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

from google.protobuf.message import Message

from workcoord.api.v1 import lane_pb2, worker_pb2
from workcoord.cli.cleanup import register_cleanup
from workcoord.cli.common import (
    EXIT_USAGE,
    CliError,
    add_command_group,
    add_connection_flags,
    add_coordinator_flag,
    load_message,
    require_given,
    run_call,
)
from workcoord.cli.lane_parts import register_worker_reads
from workcoord.cli.supervisor import register_run
from workcoord.client.worker import LeaseHandle, Worker, run_identity_here

__all__ = ["register"]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``worker lease|start|heartbeat|complete|fail|checkpoint|release|run|cleanup``."""
    sub = add_command_group(commands, "worker_command", "worker", help="scripted worker calls")

    lease = sub.add_parser("lease", help="lease ready work (prints the leases, with tokens)")
    lease.add_argument(
        "--class",
        dest="worker_class",
        required=True,
        metavar="CLASS[,CLASS...]",
        help="worker class, or several comma-separated (the best ready item of any goes first)",
    )
    lease.add_argument("--max-items", type=int, default=1)
    lease.add_argument("--lease-seconds", type=int, default=30)
    lease.add_argument("--wait-seconds", type=int, default=0, help="long-poll up to this long")
    lease.add_argument(
        "--request-id",
        default=None,
        help="send the same id again to retry a call whose reply was lost (default: a new one)",
    )
    lease.add_argument(
        "--start", action="store_true", help="start at once with the run identity below"
    )
    _add_identity_flags(lease)
    lease.set_defaults(handler=_lease)

    start = sub.add_parser("start", help="record the run identity; the lease becomes RUNNING")
    _add_lease_flags(start)
    _add_identity_flags(start)
    start.set_defaults(handler=_start)

    heartbeat = sub.add_parser("heartbeat", help="extend the lease")
    _add_lease_flags(heartbeat)
    heartbeat.add_argument("--progress", default="", help="a short note (at most 1 KiB)")
    heartbeat.set_defaults(handler=_heartbeat)

    complete = sub.add_parser("complete", help="finish with evidence")
    _add_lease_flags(complete)
    complete.add_argument("--evidence-file", help="proto3 JSON of the Evidence; - reads stdin")
    complete.add_argument("--summary", default="")
    complete.add_argument("--verdict", choices=["PASS", "FAIL"], help="for REVIEW items")
    complete.add_argument("--link", dest="links", action="append", default=[])
    complete.set_defaults(handler=_complete)

    fail = sub.add_parser("fail", help="fail the attempt")
    _add_lease_flags(fail)
    fail.add_argument("--message", required=True)
    fail.add_argument("--type", dest="error_type", default="")
    fail.add_argument(
        "--no-retry", dest="retryable", action="store_false", help="dead-letter instead of retry"
    )
    fail.set_defaults(handler=_fail)

    checkpoint = sub.add_parser("checkpoint", help="end the attempt with a checkpoint")
    _add_lease_flags(checkpoint)
    checkpoint.add_argument("--file", help="proto3 JSON of the Checkpoint; - reads stdin")
    checkpoint.add_argument("--summary", default="")
    checkpoint.add_argument("--next-action", default="")
    checkpoint.add_argument(
        "--blocked-reason",
        default="",
        choices=["", "human", "secret", "destructive", "policy", "dependency", "unavailable"],
    )
    checkpoint.add_argument("--file-changed", dest="files_changed", action="append", default=[])
    checkpoint.set_defaults(handler=_checkpoint)

    release = sub.add_parser("release", help="give the lease back (burns no attempt)")
    _add_lease_flags(release)
    release.add_argument("--reason", default="")
    release.set_defaults(handler=_release)

    for parser in (lease, start, heartbeat, complete, fail, checkpoint, release):
        add_coordinator_flag(parser)
        _add_worker_flags(parser)
        add_connection_flags(parser)

    register_run(sub)
    register_cleanup(sub)
    register_worker_reads(sub)


def _add_worker_flags(parser: argparse.ArgumentParser) -> None:
    default = os.environ.get("WORKCOORD_WORKER_ID") or None
    parser.add_argument(
        "--worker-id",
        default=default,
        required=default is None,
        help="this worker's id (env WORKCOORD_WORKER_ID)",
    )


def _add_lease_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lease_id", metavar="LEASE_ID")
    parser.add_argument(
        "--lease-token", default=None, help="prefer env WORKCOORD_LEASE_TOKEN or --lease-token-file"
    )
    parser.add_argument("--lease-token-file", default=None)


def _add_identity_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("run identity")
    group.add_argument("--identity-file", help="proto3 JSON of the RunIdentity; - reads stdin")
    group.add_argument("--agent-id", default=os.environ.get("WORKCOORD_AGENT_ID") or "")
    group.add_argument("--engine", default=os.environ.get("WORKCOORD_AGENT_ENGINE") or "")
    group.add_argument("--account", default=os.environ.get("WORKCOORD_AGENT_ACCOUNT") or "")
    group.add_argument("--worktree", default=None, help="default: the current directory")
    group.add_argument("--branch", default="")
    group.add_argument(
        "--pid",
        type=int,
        default=None,
        help="the process doing the work (default: the one that ran this command)",
    )


def _lease_handle(args: argparse.Namespace) -> LeaseHandle:
    token: str | None = args.lease_token
    if token is None and args.lease_token_file:
        try:
            token = Path(args.lease_token_file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise CliError(f"cannot read {args.lease_token_file}: {exc.strerror}") from None
    token = token or os.environ.get("WORKCOORD_LEASE_TOKEN") or None
    if not token:
        raise CliError(
            "no lease token: set WORKCOORD_LEASE_TOKEN or pass --lease-token-file", EXIT_USAGE
        )
    return LeaseHandle(args.lease_id, token)


def _run_identity(args: argparse.Namespace) -> lane_pb2.RunIdentity:
    if args.identity_file:
        return load_message(args.identity_file, lane_pb2.RunIdentity())
    require_given(
        "run identity incomplete; missing ",
        (
            ("--agent-id / WORKCOORD_AGENT_ID", args.agent_id),
            ("--engine / WORKCOORD_AGENT_ENGINE", args.engine),
            ("--account / WORKCOORD_AGENT_ACCOUNT", args.account),
            ("--branch", args.branch),
        ),
    )
    # This command is short-lived: by default the identity is its caller's (the script).
    pid = args.pid or os.getppid()
    return run_identity_here(
        args.agent_id,
        args.engine,
        args.account,
        args.worktree or os.getcwd(),
        args.branch,
        pid=pid,
    )


def _run_worker(args: argparse.Namespace, call: Callable[[Worker], Awaitable[Message]]) -> int:
    """Make one worker call as ``--worker-id`` on ``--coordinator``; print its answer."""
    classes = tuple(c.strip() for c in getattr(args, "worker_class", "").split(",") if c.strip())
    return run_call(
        args,
        lambda client: call(
            Worker(
                client,
                args.coordinator_id,
                args.worker_id,
                classes[0] if classes else "",
                classes,
            )
        ),
    )


def _lease(args: argparse.Namespace) -> int:
    identity = _run_identity(args) if args.start else None

    async def lease(worker: Worker) -> Message:
        leases = await worker.lease(
            max_items=args.max_items,
            lease_seconds=args.lease_seconds,
            wait_seconds=args.wait_seconds,
            run_identity=identity,
            request_id=args.request_id,
        )
        return worker_pb2.LeaseResponse(leases=leases)

    return _run_worker(args, lease)


def _start(args: argparse.Namespace) -> int:
    handle = _lease_handle(args)
    identity = _run_identity(args)
    return _run_worker(args, lambda worker: worker.start(handle, identity))


def _heartbeat(args: argparse.Namespace) -> int:
    handle = _lease_handle(args)
    return _run_worker(args, lambda worker: worker.heartbeat(handle, args.progress))


def _complete(args: argparse.Namespace) -> int:
    handle = _lease_handle(args)
    if args.evidence_file:
        evidence = load_message(args.evidence_file, lane_pb2.Evidence())
    else:
        evidence = lane_pb2.Evidence(summary=args.summary, links=args.links, verdict=args.verdict)
    return _run_worker(args, lambda worker: worker.complete(handle, evidence))


def _fail(args: argparse.Namespace) -> int:
    handle = _lease_handle(args)
    return _run_worker(
        args,
        lambda worker: worker.fail(
            handle, args.message, error_type=args.error_type, retryable=args.retryable
        ),
    )


def _checkpoint(args: argparse.Namespace) -> int:
    handle = _lease_handle(args)
    if args.file:
        checkpoint = load_message(args.file, lane_pb2.Checkpoint())
    else:
        checkpoint = lane_pb2.Checkpoint(
            summary=args.summary,
            files_changed=args.files_changed,
            next_action=args.next_action,
            blocked_reason=args.blocked_reason,
        )
    return _run_worker(args, lambda worker: worker.checkpoint(handle, checkpoint))


def _release(args: argparse.Namespace) -> int:
    handle = _lease_handle(args)
    return _run_worker(args, lambda worker: worker.release(handle, args.reason))
