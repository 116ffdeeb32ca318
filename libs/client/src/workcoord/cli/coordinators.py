"""``workcoord coordinators create|list|get|update``, ``workcoord digest [DAY]`` and
``workcoord pending-actions list|resolve``: work coordinators and what their humans owe."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from google.protobuf import field_mask_pb2

from workcoord.api.v1 import work_coordinator_pb2
from workcoord.cli.common import (
    EXIT_USAGE,
    CliError,
    add_client_flags,
    add_command_group,
    add_paging_flags,
    enum_names,
    load_message,
    parse_bool,
    parse_limit,
    request_of,
    set_call,
)
from workcoord.cli.output import add_output_flag

__all__ = ["register"]

WorkCoordinator = work_coordinator_pb2.WorkCoordinator
_SCOPES = {"ORG": WorkCoordinator.ORG, "GLOBAL": WorkCoordinator.GLOBAL}
_ACTION_STATES = enum_names(work_coordinator_pb2.PendingAction.State)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``coordinators``, ``digest`` and ``pending-actions``."""
    _register_coordinators(commands)

    digest = commands.add_parser("digest", help="the digest of one UTC day (default today)")
    digest.add_argument("day", nargs="?", default=None, metavar="DAY", help="YYYY-MM-DD (UTC)")
    set_call(digest, _digest_request, lambda c: c.coordinators.GetDigest)

    sub = add_command_group(
        commands, "actions_command", "pending-actions", help="owned follow-ups (ticket closures)"
    )
    list_ = sub.add_parser("list", help="list pending actions")
    list_.add_argument("--state", choices=_ACTION_STATES, default=None)
    add_paging_flags(list_)
    set_call(
        list_,
        request_of(
            work_coordinator_pb2.ListPendingActionsRequest, "coordinator_id", "state", paged=True
        ),
        lambda c: c.coordinators.ListPendingActions,
    )
    resolve = sub.add_parser("resolve", help="resolve a pending action by hand")
    resolve.add_argument("action_id", metavar="ACTION_ID")
    resolve.add_argument("--resolution", required=True, help="how it was resolved")
    set_call(
        resolve,
        request_of(
            work_coordinator_pb2.ResolvePendingActionRequest,
            "coordinator_id",
            "action_id",
            "resolution",
        ),
        lambda c: c.coordinators.ResolvePendingAction,
    )

    for parser in (digest, list_, resolve):
        add_output_flag(parser)
    add_client_flags((digest, list_, resolve), coordinator=True)


def _register_coordinators(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sub = add_command_group(
        commands, "coordinators_command", "coordinators", help="work coordinators (the queues)"
    )

    create = sub.add_parser("create", help="create a work coordinator")
    create.add_argument(
        "--file", default=None, help="proto3 JSON of the WorkCoordinator; flags override it"
    )
    create.add_argument("--scope", choices=sorted(_SCOPES), default=None, help="default ORG")
    create.add_argument("--org", dest="org_slug", default=None, help="the org's slug (ORG scope)")
    _add_settable(create)
    create.add_argument("--request-id", default="", help="idempotency key")
    set_call(create, _create_request, lambda c: c.coordinators.CreateWorkCoordinator)

    list_ = sub.add_parser("list", help="list the work coordinators you may read")
    list_.add_argument("--org", dest="org_slug", default="", help="only this org's")
    add_paging_flags(list_)
    set_call(
        list_,
        request_of(work_coordinator_pb2.ListWorkCoordinatorsRequest, "org_slug", paged=True),
        lambda c: c.coordinators.ListWorkCoordinators,
    )

    get = sub.add_parser("get", help="show a work coordinator")
    get.add_argument("coordinator_id", metavar="ID")
    set_call(
        get,
        request_of(work_coordinator_pb2.GetWorkCoordinatorRequest, "coordinator_id"),
        lambda c: c.coordinators.GetWorkCoordinator,
    )

    update = sub.add_parser("update", help="change a work coordinator (only the given fields)")
    update.add_argument("coordinator_id", metavar="ID")
    _add_settable(update)
    update.add_argument("--enabled", type=parse_bool, default=None, help="true or false")
    update.add_argument("--etag", default="", help="refuse the change if it moved since")
    set_call(update, _update_request, lambda c: c.coordinators.UpdateWorkCoordinator)

    for parser in (create, list_, get, update):
        add_output_flag(parser)
    add_client_flags((create, list_, get, update))


def _add_settable(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--display-name", default=None)
    parser.add_argument(
        "--digest-owner",
        default=None,
        help="an e-mail address (required for an ORG work coordinator)",
    )
    parser.add_argument(
        "--capacity",
        action="append",
        default=None,
        metavar="CLASS=N",
        help="a worker class's capacity (repeat for several; on update it replaces the map)",
    )
    parser.add_argument("--parent", dest="parent_id", default=None, help="parent (GLOBAL) id")
    parser.add_argument(
        "--daily-cost",
        default=None,
        metavar="DOLLARS",
        help="the day budget's cost limit per UTC day, in dollars (none: no limit)",
    )
    parser.add_argument(
        "--daily-tokens",
        default=None,
        metavar="N",
        help="the day budget's token limit per UTC day (none: no limit)",
    )


def _capacity(pairs: list[str]) -> dict[str, int]:
    capacity: dict[str, int] = {}
    for pair in pairs:
        name, sep, number = pair.partition("=")
        if not sep or not name or not number.strip().isdigit():
            raise CliError(f"--capacity {pair!r}: expected CLASS=N", EXIT_USAGE)
        capacity[name.strip()] = int(number)
    return capacity


def _apply(args: argparse.Namespace, coordinator: WorkCoordinator) -> list[str]:
    """Copy the flags given into ``coordinator``; the names of the fields set."""
    changed: list[str] = []
    if args.display_name is not None:
        coordinator.display_name = args.display_name
        changed.append("display_name")
    if args.digest_owner is not None:
        coordinator.digest_owner = args.digest_owner
        changed.append("digest_owner")
    if args.capacity is not None:
        coordinator.class_capacity.clear()
        coordinator.class_capacity.update(_capacity(args.capacity))
        changed.append("class_capacity")
    if args.parent_id is not None:
        coordinator.parent_coordinator_id = args.parent_id
        changed.append("parent_coordinator_id")
    if args.daily_cost is not None:
        cost = parse_limit(args.daily_cost, dollars=True)
        if cost is not None:
            coordinator.budget.daily_cost_micros = cost
        changed.append("budget.daily_cost_micros")
    if args.daily_tokens is not None:
        tokens = parse_limit(args.daily_tokens, dollars=False)
        if tokens is not None:
            coordinator.budget.daily_tokens = tokens
        changed.append("budget.daily_tokens")
    if getattr(args, "enabled", None) is not None:
        coordinator.enabled = args.enabled
        changed.append("enabled")
    return changed


def _create_request(
    args: argparse.Namespace,
) -> work_coordinator_pb2.CreateWorkCoordinatorRequest:
    coordinator = WorkCoordinator()
    if args.file:
        load_message(args.file, coordinator)
    _apply(args, coordinator)
    if args.scope is not None:
        coordinator.scope = _SCOPES[args.scope]
    elif not coordinator.scope:
        coordinator.scope = WorkCoordinator.ORG
    if args.org_slug is not None:
        coordinator.org_slug = args.org_slug
    return work_coordinator_pb2.CreateWorkCoordinatorRequest(
        work_coordinator=coordinator, request_id=args.request_id
    )


def _update_request(
    args: argparse.Namespace,
) -> work_coordinator_pb2.UpdateWorkCoordinatorRequest:
    coordinator = WorkCoordinator(etag=args.etag)
    changed = _apply(args, coordinator)
    if not changed:
        raise CliError("nothing to change: give at least one field flag", EXIT_USAGE)
    return work_coordinator_pb2.UpdateWorkCoordinatorRequest(
        coordinator_id=args.coordinator_id,
        work_coordinator=coordinator,
        update_mask=field_mask_pb2.FieldMask(paths=changed),
    )


def _digest_request(args: argparse.Namespace) -> work_coordinator_pb2.GetDigestRequest:
    day = args.day or datetime.now(UTC).strftime("%Y-%m-%d")
    return work_coordinator_pb2.GetDigestRequest(coordinator_id=args.coordinator_id, day=day)
