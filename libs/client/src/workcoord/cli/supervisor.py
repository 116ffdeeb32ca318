"""``workcoord worker run``: the foreground supervisor, one item (or N) at a time per coordinator.

One supervisor serves a machine's whole scope: ``--coordinator A,B`` runs one worker loop per
work coordinator inside it (each item's command in its own process group), and ``--class a,b``
makes its one worker id serve all those classes (each Lease takes the best ready item of any of
them; capacity is still the coordinator's per class). A lost lease on any coordinator ends the
supervisor with exit 3: the others stop taking work and drain like on SIGTERM.

For each item it leases (long-polling) it chooses the worktree (:mod:`.roots`), records the run
identity from the machine itself — its own pid, the real hostname, the canonical worktree, the
checkout's branch, its start time — and only then spawns the command in its own process group
(:mod:`.process_group`), in that worktree, with the item's ids and its inputs, evidence,
checkpoint and usage files (:mod:`.usage_file`) in its environment, never the lease token or
the credential. :meth:`Worker.run` heartbeats every third of the lease (with the usage file's
totals) and writes the outcome (with them too):

- a checkpoint file left behind (≤ 8 KiB, the API's rules) ends the attempt with it;
- exit 0 completes with the evidence file (proto3 JSON of ``Evidence``) or a plain summary;
- a non-zero exit or a signal fails the attempt with that status (retryable);
- a worktree outside the trusted directories fails it, not retryable: ``WORKTREE_REFUSED``.

``LEASE_LOST`` of any cause: SIGTERM to the group, SIGKILL after ``--kill-grace``, nothing more
written, exit 3. SIGINT/SIGTERM: forwarded to the group; a command still running after the
grace period is killed and its lease released (no attempt burned); a second signal kills at
once. A heartbeat's ``stop``: SIGTERM to the group, SIGKILL after the grace, as on
LEASE_LOST, then the final usage goes out: DEADLINE_EXCEEDED fails the attempt (retryable, the
usage on the fail), any other reason heartbeats the usage once more and releases.
Exit codes: 0 stopped or done, 1 the coordinator refused, 2 usage, 3 lease lost.

``--concurrency N``: up to N commands at once per work coordinator, each item as above (its
worktree, identity, process group, attempt files); the SDK loop batches their heartbeats (one
``BatchHeartbeat`` per interval) and outcomes (``BatchComplete`` / ``BatchFail``). A failure,
a ``stop`` or a lost lease stops only that command; after a loss the others finish, nothing new
is leased, exit 3. SIGINT/SIGTERM drains them all.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import re
import shutil
import signal
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from workcoord.api.v1 import lane_pb2, worker_pb2
from workcoord.cli import roots as roots_module
from workcoord.cli.attempt_files import (
    AttemptFiles,
    attempt_files,
    command_outcome,
    inputs_document,
    signal_name,
)
from workcoord.cli.common import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    default_address,
    parse_positive_seconds,
    print_error,
    require_given,
    token_from,
)
from workcoord.cli.process_group import ProcessGroup
from workcoord.cli.usage_file import UsageFile
from workcoord.client.batching import MAX_ENTRIES
from workcoord.client.client import WorkcoordClient
from workcoord.client.worker import Worker, run_identity_here
from workcoord.client.worker_loop import (
    Assignment,
    Failed,
    LoopEvent,
    LoopOptions,
    Outcome,
    Released,
)
from workcoord.kit.errors import LeaseLost, WorkcoordError
from workcoord.kit.validation import validate

__all__ = [
    "EXIT_LEASE_LOST",
    "AttemptFiles",
    "Reporter",
    "Supervisor",
    "SupervisorConfig",
    "attempt_files",
    "child_environment",
    "command_outcome",
    "config_from_args",
    "default_worker_id",
    "inputs_document",
    "register_run",
]

EXIT_LEASE_LOST = 3

WORKTREE_REFUSED = "WORKTREE_REFUSED"
# Credentials never reach the command: these by name, and any variable holding the credential.
_SECRET_NAME = re.compile(r"^WORKCOORD_.*(TOKEN|KEY|SECRET)", re.IGNORECASE)
_WORKER_ID_CHARS = re.compile(r"[^A-Za-z0-9._:@-]")
_STDERR_FD = 2  # the process's own, whatever sys.stderr was replaced by


@dataclass(frozen=True, slots=True)
class SupervisorConfig:
    """Everything ``worker run`` was told, checked."""

    address: str
    token: str | None
    coordinator_ids: tuple[str, ...]
    worker_id: str
    worker_classes: tuple[str, ...]
    command: tuple[str, ...]
    agent_id: str
    engine: str
    account: str
    fallback_branch: str
    own_directory: str
    roots: tuple[str, ...]
    lease_seconds: int = 30
    wait_seconds: int = 30
    once: bool = False
    kill_grace: float = 10.0
    json_output: bool = False
    concurrency: int = 1

    @property
    def coordinator_id(self) -> str:
        """The first work coordinator served (the only one, usually)."""
        return self.coordinator_ids[0]

    @property
    def worker_class(self) -> str:
        """The first class served: the worker's class as Lease names it."""
        return self.worker_classes[0]


def register_run(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``worker run``."""
    run = sub.add_parser(
        "run",
        help="foreground supervisor: lease, run COMMAND per item, heartbeat, finish",
        description="Lease one item at a time and run COMMAND for it in its own process group.",
    )
    run.add_argument(
        "--coordinator",
        dest="coordinator_id",
        metavar="ID",
        default=os.environ.get("WORKCOORD_COORDINATOR_ID") or None,
        help="work coordinator id, or several comma-separated: one worker loop each, in this "
        "one supervisor (env WORKCOORD_COORDINATOR_ID)",
    )
    run.add_argument(
        "--class",
        dest="worker_class",
        metavar="CLASS[,CLASS...]",
        required=True,
        help="worker class, or several comma-separated: one worker id serving them all",
    )
    run.add_argument(
        "--worker-id",
        default=os.environ.get("WORKCOORD_WORKER_ID") or None,
        help="env WORKCOORD_WORKER_ID; default: host, classes and a hash of this directory",
    )
    run.add_argument("--lease-seconds", type=_bounded(5, 300), default=30, metavar="N")
    run.add_argument("--wait-seconds", type=_bounded(0, 60), default=30, metavar="N")
    run.add_argument(
        "--concurrency",
        type=_bounded(1, MAX_ENTRIES),
        default=1,
        metavar="N",
        help="run up to N commands at once, each item in its own process group; their "
        "heartbeats and outcomes go out in batched calls (default %(default)s)",
    )
    run.add_argument("--once", action="store_true", help="handle one item, then exit")
    run.add_argument(
        "--kill-grace",
        type=parse_positive_seconds,
        default=10.0,
        metavar="SECONDS",
        help="between SIGTERM and SIGKILL (default %(default)s)",
    )
    run.add_argument(
        "--branch",
        default="",
        help="branch to record when the worktree is not a git checkout (otherwise refused)",
    )
    run.add_argument("--agent-id", default=os.environ.get("WORKCOORD_AGENT_ID") or "")
    run.add_argument("--engine", default=os.environ.get("WORKCOORD_AGENT_ENGINE") or "")
    run.add_argument("--account", default=os.environ.get("WORKCOORD_AGENT_ACCOUNT") or "")
    run.add_argument("--json", dest="json_output", action="store_true", help="JSON lines")
    run.add_argument(
        "--address",
        default=default_address(),
        help="coordinator gRPC address (env WORKCOORD_ADDRESS, default %(default)s)",
    )
    run.add_argument("--token", default=None, help="prefer env WORKCOORD_TOKEN")
    run.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARGS...]")
    run.set_defaults(handler=_run)


def _bounded(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low} and {high}")
        return value

    return parse


def _run(args: argparse.Namespace) -> int:
    config = config_from_args(args, os.environ)
    reporter = Reporter(config.json_output)
    try:
        return asyncio.run(Supervisor(config, reporter).main())
    except LeaseLost as err:
        reporter.emit("exit", detail=f"lease lost ({err.cause or err.reason}): {err.message}")
        return EXIT_LEASE_LOST
    except WorkcoordError as err:
        print_error(err)
        return EXIT_ERROR


def config_from_args(args: argparse.Namespace, environ: Mapping[str, str]) -> SupervisorConfig:
    """Check the flags and environment before anything is leased (a :class:`CliError`, exit 2,
    naming every problem)."""
    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        raise CliError("worker run: no command given (… -- COMMAND [ARGS...])", EXIT_USAGE)
    if not args.coordinator_id:
        raise CliError(
            "worker run: --coordinator (or WORKCOORD_COORDINATOR_ID) is required", EXIT_USAGE
        )
    coordinator_ids = _comma_list(args.coordinator_id, "--coordinator")
    worker_classes = _comma_list(args.worker_class, "--class")
    require_given(
        "worker run: missing ",
        (
            ("WORKCOORD_AGENT_ID (--agent-id)", args.agent_id),
            ("WORKCOORD_AGENT_ENGINE (--engine)", args.engine),
            ("WORKCOORD_AGENT_ACCOUNT (--account)", args.account),
        ),
    )
    if "/" not in command[0] and shutil.which(command[0]) is None:
        raise CliError(f"worker run: command not found: {command[0]}", EXIT_USAGE)
    try:
        roots = roots_module.parse_roots(environ.get(roots_module.ROOTS_ENV))
    except roots_module.RootsError as exc:
        raise CliError(f"worker run: {exc}", EXIT_USAGE) from None
    own = roots_module.own_directory()
    if not args.branch and roots_module.current_branch(own) is None:
        raise CliError(
            f"worker run: {own} is not a git checkout; run in one or pass --branch", EXIT_USAGE
        )
    problems = [
        f"{v.field}: {v.description}"
        for v in validate(
            run_identity_here(args.agent_id, args.engine, args.account, own, args.branch or "-")
        )
    ]
    if problems:
        raise CliError("worker run: bad run identity labels: " + "; ".join(problems), EXIT_USAGE)
    return SupervisorConfig(
        address=args.address,
        token=token_from(args.token, environ),
        coordinator_ids=coordinator_ids,
        worker_id=args.worker_id or default_worker_id("-".join(worker_classes), own),
        worker_classes=worker_classes,
        command=tuple(command),
        agent_id=args.agent_id,
        engine=args.engine,
        account=args.account,
        fallback_branch=args.branch,
        own_directory=own,
        roots=roots,
        lease_seconds=args.lease_seconds,
        wait_seconds=args.wait_seconds,
        once=args.once,
        kill_grace=args.kill_grace,
        json_output=args.json_output,
        concurrency=args.concurrency,
    )


def _comma_list(text: str, flag: str) -> tuple[str, ...]:
    """``a,b`` as ``("a", "b")``, each once, in order; an empty entry is a usage error."""
    entries = [entry.strip() for entry in text.split(",")]
    if not all(entries):
        raise CliError(f"worker run: {flag} {text!r} has an empty entry", EXIT_USAGE)
    return tuple(dict.fromkeys(entries))


def default_worker_id(worker_class: str, directory: str) -> str:
    """``<host>-<class>-<hash of the directory>``: stable across restarts of the same
    supervisor, distinct for supervisors of the same class in different directories."""
    host = _WORKER_ID_CHARS.sub("-", socket.gethostname().split(".")[0]) or "host"
    digest = hashlib.sha256(directory.encode()).hexdigest()[:8]
    worker_id = f"{host}-{worker_class}-{digest}".lstrip("._:@-")
    return worker_id[-128:]


def child_environment(
    base: Mapping[str, str], credential: str | None, attempt: Mapping[str, str]
) -> dict[str, str]:
    """The command's environment: ``base`` without credentials, plus the attempt's variables."""
    env = {
        name: value
        for name, value in base.items()
        if not _SECRET_NAME.match(name) and not (credential and credential in value)
    }
    env.update(attempt)
    return env


class Reporter:
    """One line per step on stdout: ``HH:MM:SS event key=value … — detail``, or JSON lines."""

    def __init__(self, json_output: bool) -> None:
        self.json_output = json_output

    def emit(self, event: str, detail: str = "", **fields: object) -> None:
        now = datetime.now(UTC)
        shown = {key: value for key, value in fields.items() if value not in ("", None, 0)}
        if self.json_output:
            record: dict[str, object] = {"time": now.isoformat(), "event": event, **shown}
            if detail:
                record["detail"] = detail
            line = json.dumps(record, separators=(",", ":"))
        else:
            parts = [
                now.strftime("%H:%M:%S"),
                event,
                *(f"{k}={_text(v)}" for k, v in shown.items()),
            ]
            line = " ".join(parts) + (f" — {detail}" if detail else "")
        print(line, flush=True)

    def loop_event(self, event: LoopEvent, coordinator: str = "") -> None:
        item = event.item
        self.emit(
            event.kind,
            event.detail,
            coordinator=coordinator,
            lease=event.lease_id,
            item=item.item_id if item else "",
            lane=item.lane_id if item else "",
            kind=lane_pb2.Item.Kind.Name(item.kind) if item and item.kind else "",
            attempt=event.attempt,
        )


class Supervisor:
    """One ``worker run``: a loop per work coordinator, the signals, the command of each
    loop's current item."""

    def __init__(self, config: SupervisorConfig, reporter: Reporter) -> None:
        self.config = config
        self.reporter = reporter
        self.stop = asyncio.Event()
        self.signals: list[int] = []
        # The process group of each running command (up to --concurrency per loop).
        self.groups: set[ProcessGroup] = set()

    async def main(self) -> int:
        """Run until stopped (or one item with ``--once``); the exit code."""
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, self._on_signal, signum)
        config = self.config
        options = LoopOptions(
            lease_seconds=config.lease_seconds,
            wait_seconds=config.wait_seconds,
            once=config.once,
            concurrency=config.concurrency,
            # The handler forwards the signal and kills after the grace itself; this is only
            # the backstop should it hang.
            drain_seconds=config.kill_grace + 30.0,
        )
        several = len(config.coordinator_ids) > 1
        self.reporter.emit(
            "ready",
            coordinator=config.coordinator_id if not several else "",
            coordinators=list(config.coordinator_ids) if several else None,
            worker=config.worker_id,
            workerClass=config.worker_class,
            workerClasses=list(config.worker_classes) if len(config.worker_classes) > 1 else None,
            directory=config.own_directory,
            concurrency=config.concurrency if config.concurrency > 1 else None,
        )
        try:
            async with WorkcoordClient(config.address, config.token) as client:
                await self._serve_all(client, options)
        finally:
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(signum)
        self.reporter.emit("exit", detail="stopped" if self.signals else "done")
        return EXIT_OK

    async def _serve_all(self, client: WorkcoordClient, options: LoopOptions) -> None:
        """One worker loop per work coordinator, side by side. The first to fail (a lost
        lease, a refusal) stops the others as a signal would (they drain: no new lease, the
        running command gets the grace period, its lease is released), then is raised."""
        config = self.config
        several = len(config.coordinator_ids) > 1
        loops = [
            asyncio.ensure_future(self._serve(client, coordinator_id, options, several))
            for coordinator_id in config.coordinator_ids
        ]
        failure: BaseException | None = None
        try:
            for finished in asyncio.as_completed(loops):
                try:
                    await finished
                except Exception as exc:  # raised below, once the others drained
                    if failure is None:
                        failure = exc
                        self.stop.set()
        finally:
            for loop in loops:
                loop.cancel()  # only when cancelled ourselves: the others have ended
        if failure is not None:
            raise failure

    async def _serve(
        self, client: WorkcoordClient, coordinator_id: str, options: LoopOptions, several: bool
    ) -> None:
        config = self.config
        worker = Worker(
            client, coordinator_id, config.worker_id, config.worker_class, config.worker_classes
        )
        shown = coordinator_id if several else ""

        async def handle(assignment: Assignment) -> Outcome:
            return await self.handle(assignment, coordinator_id)

        def on_event(event: LoopEvent) -> None:
            self.reporter.loop_event(event, shown)

        await worker.run(handle, options, stop=self.stop, on_event=on_event)

    def _on_signal(self, signum: int) -> None:
        self.signals.append(signum)
        name = signal.Signals(signum).name
        if len(self.signals) == 1:
            self.reporter.emit("stopping", detail=f"{name}: finishing the current item(s)")
            self.stop.set()
        else:
            for group in tuple(self.groups):
                self.reporter.emit("killing", pgid=group.pgid, detail=f"second signal {name}")
                group.send(signal.SIGKILL)

    async def handle(self, assignment: Assignment, coordinator_id: str = "") -> Outcome:
        """Run the command for one item of ``coordinator_id`` (the handler of
        :meth:`Worker.run`)."""
        config = self.config
        inputs = inputs_document(assignment.item)
        choice = roots_module.choose_worktree(inputs, config.own_directory, config.roots)
        if not choice.allowed:
            return Failed(choice.refusal, error_type=WORKTREE_REFUSED, retryable=False)
        branch = await asyncio.to_thread(roots_module.current_branch, choice.path)
        if branch is None:
            if not config.fallback_branch:
                return Failed(
                    f"worktree {json.dumps(choice.path)} is not a git checkout",
                    error_type=WORKTREE_REFUSED,
                    retryable=False,
                )
            branch = config.fallback_branch
        identity = run_identity_here(
            config.agent_id, config.engine, config.account, choice.path, branch, pid=os.getpid()
        )
        await assignment.start(identity)
        if assignment.stopping.is_set():
            return Released("worker stopping before the command started")
        with attempt_files(assignment.item) as files:
            return await self._run_command(
                assignment, choice.path, branch, files, coordinator_id or config.coordinator_id
            )

    async def _run_command(
        self,
        assignment: Assignment,
        worktree: str,
        branch: str,
        files: AttemptFiles,
        coordinator_id: str,
    ) -> Outcome:
        config = self.config
        item = assignment.item
        env = child_environment(
            os.environ,
            config.token,
            {
                "WORKCOORD_COORDINATOR_ID": coordinator_id,
                "WORKCOORD_WORKER_CLASS": item.worker_class,
                "WORKCOORD_LEASE_ID": assignment.lease_id,
                "WORKCOORD_ITEM_ID": item.item_id,
                "WORKCOORD_LANE_ID": item.lane_id,
                "WORKCOORD_ITEM_KIND": lane_pb2.Item.Kind.Name(item.kind),
                "WORKCOORD_ATTEMPT": str(assignment.attempt),
                "WORKCOORD_INPUTS_FILE": str(files.inputs),
                "WORKCOORD_EVIDENCE_FILE": str(files.evidence),
                "WORKCOORD_CHECKPOINT_FILE": str(files.checkpoint),
                "WORKCOORD_USAGE_FILE": str(files.usage),
            },
        )
        # With --json, stdout carries only the supervisor's lines: the command writes to stderr.
        stdout = _STDERR_FD if config.json_output else None
        try:
            group = await ProcessGroup.spawn(config.command, cwd=worktree, env=env, stdout=stdout)
        except OSError as exc:
            return Failed(f"cannot start {config.command[0]}: {exc}", error_type="SPAWN")
        self.groups.add(group)
        usage = UsageFile(files.usage)
        assignment.usage_reader = usage.read
        self.reporter.emit(
            "running", lease=assignment.lease_id, pid=group.pid, worktree=worktree, branch=branch
        )
        try:
            status, stopped_by = await self._supervise(group, assignment)
        except asyncio.CancelledError:
            # The lease is lost (or the drain ran out): nothing of this attempt may go on.
            killed = await group.stop(config.kill_grace)
            self.reporter.emit("killed", lease=assignment.lease_id, pgid=group.pgid, pids=killed)
            raise
        finally:
            self.groups.discard(group)
            # The last totals, read while the file is there: the final write carries them.
            assignment.usage_reader = None
            assignment.usage = usage.read()
        leftovers = await group.stop(config.kill_grace) if group.members() else []
        if leftovers:
            self.reporter.emit("killed", lease=assignment.lease_id, pids=leftovers)
        if assignment.told_stop is not None:
            return await self._told_outcome(assignment)
        return command_outcome(Path(config.command[0]).name, status, stopped_by, files)

    async def _told_outcome(self, assignment: Assignment) -> Outcome:
        """The ending write of an attempt a heartbeat told to stop, its command gone: a
        deadline fails it (retryable, the usage on the fail); any other reason releases it,
        after a heartbeat carries the final usage (a release carries none)."""
        told = assignment.told_stop
        assert told is not None
        reason = worker_pb2.Stop.Reason.Name(told.reason)
        detail = f"stopped by the coordinator: {reason}" + (
            f": {told.message}" if told.message else ""
        )
        if told.reason == worker_pb2.Stop.DEADLINE_EXCEEDED:
            return Failed(detail[:1024], error_type=reason, retryable=True)
        if assignment.current_usage() is not None:
            await assignment.report_usage()
        return Released(detail[:1024])

    async def _supervise(self, group: ProcessGroup, assignment: Assignment) -> tuple[int, int]:
        """Wait for the command; on a drain forward the signal, then kill after the grace.
        (exit status, the forwarded signal or 0)."""
        exited = asyncio.ensure_future(group.wait())
        stopping = asyncio.ensure_future(assignment.stopping.wait())
        told = asyncio.ensure_future(assignment.told_to_stop.wait())
        try:
            await asyncio.wait({exited, stopping, told}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            told.cancel()
        if exited.done():
            return exited.result(), 0
        # A drain forwards the signal received; a heartbeat's stop sends SIGTERM, as a lost
        # lease does, and SIGKILL after the grace.
        told_now = assignment.told_to_stop.is_set() and not assignment.stopping.is_set()
        forwarded = signal.SIGTERM if told_now or not self.signals else self.signals[0]
        group.send(forwarded)
        self.reporter.emit(
            "forwarded", lease=assignment.lease_id, pgid=group.pgid, signal=signal_name(forwarded)
        )
        done, _ = await asyncio.wait({exited}, timeout=self.config.kill_grace)
        if not done:
            group.send(signal.SIGKILL)
            self.reporter.emit("killed", lease=assignment.lease_id, pgid=group.pgid)
        return await exited, forwarded


def _text(value: object) -> str:
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)
