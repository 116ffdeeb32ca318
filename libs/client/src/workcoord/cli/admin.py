"""``workcoord admin``: orgs, work keys and the platform switch (users, members, tokens and
grants: :mod:`workcoord.cli.admin_tenancy`)."""

from __future__ import annotations

import argparse

from google.protobuf import field_mask_pb2, timestamp_pb2
from google.protobuf.message import Message

from workcoord.api.v1 import admin_pb2
from workcoord.cli.admin_tenancy import register_tenancy
from workcoord.cli.common import add_connection_flags, parse_bool, run_client_command
from workcoord.client.client import WorkcoordClient

__all__ = ["register"]

_CAPABILITIES = [v.name for v in admin_pb2.WorkKey.Capability.DESCRIPTOR.values if v.number]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``admin orgs|keys|settings``."""
    admin = commands.add_parser("admin", help="administer orgs, work keys and settings")
    groups = admin.add_subparsers(dest="admin_group", metavar="GROUP", required=True)

    orgs = groups.add_parser("orgs", help="organizations").add_subparsers(
        dest="admin_command", metavar="COMMAND", required=True
    )
    create = orgs.add_parser("create", help="create an org")
    create.add_argument("--slug", required=True, help="lowercase letters, digits, dashes")
    create.add_argument("--display-name", default="")
    create.set_defaults(handler=_orgs_create)
    list_orgs = orgs.add_parser("list", help="list orgs")
    _add_paging(list_orgs)
    list_orgs.set_defaults(handler=_orgs_list)

    keys = groups.add_parser("keys", help="work keys").add_subparsers(
        dest="admin_command", metavar="COMMAND", required=True
    )
    create_key = keys.add_parser("create", help="create a work key (its secret is shown once)")
    create_key.add_argument("--display-name", required=True)
    create_key.add_argument("--org", dest="org_slug", default="", help="org slug")
    create_key.add_argument(
        "--coordinator",
        dest="coordinator_ids",
        action="append",
        required=True,
        metavar="ID",
        help="a work coordinator the key may use (repeat for several)",
    )
    create_key.add_argument(
        "--capability",
        dest="capabilities",
        action="append",
        required=True,
        choices=_CAPABILITIES,
        help="repeat for several",
    )
    create_key.add_argument(
        "--expire-time", type=_timestamp, default=None, help="RFC 3339; default never"
    )
    create_key.set_defaults(handler=_keys_create)
    list_keys = keys.add_parser("list", help="list work keys")
    list_keys.add_argument("--org", dest="org_slug", default="")
    _add_paging(list_keys)
    list_keys.set_defaults(handler=_keys_list)
    revoke = keys.add_parser("revoke", help="revoke a work key")
    revoke.add_argument("key_id", metavar="KEY_ID")
    revoke.set_defaults(handler=_keys_revoke)

    settings = groups.add_parser("settings", help="platform settings").add_subparsers(
        dest="admin_command", metavar="COMMAND", required=True
    )
    get = settings.add_parser("get", help="show the platform settings")
    get.set_defaults(handler=_settings_get)
    set_ = settings.add_parser("set", help="change the platform settings")
    set_.add_argument(
        "--enabled",
        type=parse_bool,
        required=True,
        metavar="true|false",
        help="the platform switch: false stops work calls, the feed and recovery passes",
    )
    set_.add_argument("--etag", default="", help="refuse the change if settings moved on")
    set_.set_defaults(handler=_settings_set)

    for parser in (create, list_orgs, create_key, list_keys, revoke, get, set_):
        add_connection_flags(parser)
    register_tenancy(groups)


def _timestamp(text: str) -> timestamp_pb2.Timestamp:
    stamp = timestamp_pb2.Timestamp()
    try:
        stamp.FromJsonString(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an RFC 3339 time: {text!r}") from None
    return stamp


def _add_paging(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--page-size", type=int, default=0)
    parser.add_argument("--page-token", default="")


def _orgs_create(args: argparse.Namespace) -> int:
    async def body(client: WorkcoordClient) -> Message:
        org = admin_pb2.Org(slug=args.slug, display_name=args.display_name)
        return await client.admin.CreateOrg(admin_pb2.CreateOrgRequest(org=org))

    return run_client_command(args, body)


def _orgs_list(args: argparse.Namespace) -> int:
    async def body(client: WorkcoordClient) -> Message:
        return await client.admin.ListOrgs(
            admin_pb2.ListOrgsRequest(page_size=args.page_size, page_token=args.page_token)
        )

    return run_client_command(args, body)


def _keys_create(args: argparse.Namespace) -> int:
    async def body(client: WorkcoordClient) -> Message:
        key = admin_pb2.WorkKey(
            display_name=args.display_name,
            org_slug=args.org_slug,
            coordinator_ids=args.coordinator_ids,
            capabilities=args.capabilities,
        )
        if args.expire_time is not None:
            key.expire_time.CopyFrom(args.expire_time)
        return await client.admin.CreateWorkKey(admin_pb2.CreateWorkKeyRequest(work_key=key))

    return run_client_command(args, body)


def _keys_list(args: argparse.Namespace) -> int:
    async def body(client: WorkcoordClient) -> Message:
        return await client.admin.ListWorkKeys(
            admin_pb2.ListWorkKeysRequest(
                org_slug=args.org_slug, page_size=args.page_size, page_token=args.page_token
            )
        )

    return run_client_command(args, body)


def _keys_revoke(args: argparse.Namespace) -> int:
    async def body(client: WorkcoordClient) -> Message:
        return await client.admin.RevokeWorkKey(admin_pb2.RevokeWorkKeyRequest(key_id=args.key_id))

    return run_client_command(args, body)


def _settings_get(args: argparse.Namespace) -> int:
    async def body(client: WorkcoordClient) -> Message:
        return await client.admin.GetSettings(admin_pb2.GetSettingsRequest())

    return run_client_command(args, body)


def _settings_set(args: argparse.Namespace) -> int:
    async def body(client: WorkcoordClient) -> Message:
        settings = admin_pb2.Settings(work_coordinator_enabled=args.enabled, etag=args.etag)
        return await client.admin.UpdateSettings(
            admin_pb2.UpdateSettingsRequest(
                settings=settings,
                update_mask=field_mask_pb2.FieldMask(paths=["work_coordinator_enabled"]),
            )
        )

    return run_client_command(args, body)
