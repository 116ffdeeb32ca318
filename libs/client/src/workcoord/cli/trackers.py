"""``workcoord tracker create|list|rotate|delete``: a work coordinator's tracker connections.

The credential is read from an environment variable (``--credential-env``, default
``WORKCOORD_TRACKER_CREDENTIAL``) or a file (``--credential-file``, ``-`` for stdin), never
from a flag's value, so it stays out of shell history and process listings; the answer shows
only ``credentialSet`` and a fingerprint.
"""

from __future__ import annotations

import argparse
import os
import sys

from google.protobuf import field_mask_pb2

from workcoord.api.v1 import tracker_pb2
from workcoord.cli.common import (
    EXIT_USAGE,
    CliError,
    add_client_flags,
    add_command_group,
    add_paging_flags,
    request_of,
    set_call,
)

__all__ = ["CREDENTIAL_ENV", "register"]

CREDENTIAL_ENV = "WORKCOORD_TRACKER_CREDENTIAL"


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``tracker``."""
    sub = add_command_group(
        commands,
        "tracker_command",
        "tracker",
        help="tracker connections: the credentials tickets are closed with",
    )
    create = sub.add_parser("create", help="connect the work coordinator to a tracker")
    create.add_argument("--tracker", required=True, choices=("github", "gitlab", "jira"))
    create.add_argument(
        "--project",
        dest="projects",
        action="append",
        required=True,
        metavar="PROJECT",
        help="owner/repo (github), group/project (gitlab), KEY (jira); repeat for several",
    )
    create.add_argument("--base-url", default="", help="the tracker's API address")
    create.add_argument("--done-status", default="", help="jira: the status closing moves to")
    _credential_flags(create)
    set_call(create, _create_request, lambda c: c.trackers.CreateTrackerConnection)

    list_ = sub.add_parser("list", help="list the connections and their health")
    add_paging_flags(list_)
    set_call(
        list_,
        request_of(tracker_pb2.ListTrackerConnectionsRequest, "coordinator_id", paged=True),
        lambda c: c.trackers.ListTrackerConnections,
    )

    rotate = sub.add_parser(
        "rotate", help="give a connection a new credential (and other changed fields)"
    )
    rotate.add_argument("tracker_id", metavar="TRACKER_ID")
    rotate.add_argument("--project", dest="projects", action="append", default=None)
    rotate.add_argument("--base-url", default=None)
    rotate.add_argument("--done-status", default=None)
    _credential_flags(rotate)
    set_call(rotate, _rotate_request, lambda c: c.trackers.UpdateTrackerConnection)

    delete = sub.add_parser("delete", help="delete a connection")
    delete.add_argument("tracker_id", metavar="TRACKER_ID")
    set_call(
        delete,
        request_of(tracker_pb2.DeleteTrackerConnectionRequest, "coordinator_id", "tracker_id"),
        lambda c: c.trackers.DeleteTrackerConnection,
    )
    add_client_flags((create, list_, rotate, delete), coordinator=True)


def _credential_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--credential-env",
        default=CREDENTIAL_ENV,
        metavar="VAR",
        help=f"the environment variable holding the credential (default {CREDENTIAL_ENV})",
    )
    parser.add_argument(
        "--credential-file", default=None, metavar="FILE", help="read the credential here (- stdin)"
    )


def _credential(args: argparse.Namespace) -> str:
    if args.credential_file is not None:
        if args.credential_file == "-":
            value = sys.stdin.read()
        else:
            try:
                with open(args.credential_file, encoding="utf-8") as handle:
                    value = handle.read()
            except OSError as err:
                raise CliError(f"--credential-file: {err.strerror}", EXIT_USAGE) from err
    else:
        value = os.environ.get(args.credential_env, "")
    value = value.strip()
    if not value:
        where = args.credential_file or f"${args.credential_env}"
        raise CliError(f"no credential in {where}", EXIT_USAGE)
    return value


def _create_request(args: argparse.Namespace) -> tracker_pb2.CreateTrackerConnectionRequest:
    return tracker_pb2.CreateTrackerConnectionRequest(
        coordinator_id=args.coordinator_id,
        tracker_connection=tracker_pb2.TrackerConnection(
            tracker=args.tracker,
            base_url=args.base_url,
            projects=args.projects,
            done_status=args.done_status,
            credential=_credential(args),
        ),
    )


def _rotate_request(args: argparse.Namespace) -> tracker_pb2.UpdateTrackerConnectionRequest:
    connection = tracker_pb2.TrackerConnection(credential=_credential(args))
    paths = ["credential"]
    if args.projects is not None:
        connection.projects.extend(args.projects)
        paths.append("projects")
    if args.base_url is not None:
        connection.base_url = args.base_url
        paths.append("base_url")
    if args.done_status is not None:
        connection.done_status = args.done_status
        paths.append("done_status")
    return tracker_pb2.UpdateTrackerConnectionRequest(
        coordinator_id=args.coordinator_id,
        tracker_id=args.tracker_id,
        tracker_connection=connection,
        update_mask=field_mask_pb2.FieldMask(paths=paths),
    )
