"""``workcoord admin``: orgs, work keys and the platform switch (users, members, tokens and
grants: :mod:`workcoord.cli.admin_tenancy`)."""

from __future__ import annotations

import argparse

from google.protobuf import field_mask_pb2

from workcoord.api.v1 import admin_pb2
from workcoord.cli.admin_tenancy import register_tenancy
from workcoord.cli.common import (
    add_client_flags,
    add_command_group,
    add_paging_flags,
    add_repeated_choice,
    enum_names,
    parse_bool,
    parse_timestamp,
    request_of,
    set_call,
)

__all__ = ["register"]

_CAPABILITIES = enum_names(admin_pb2.WorkKey.Capability)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``admin orgs|keys|settings``."""
    admin = commands.add_parser("admin", help="administer orgs, work keys and settings")
    groups = admin.add_subparsers(dest="admin_group", metavar="GROUP", required=True)

    orgs = add_command_group(groups, "admin_command", "orgs", help="organizations")
    create = orgs.add_parser("create", help="create an org")
    create.add_argument("--slug", required=True, help="lowercase letters, digits, dashes")
    create.add_argument("--display-name", default="")
    set_call(create, _org_request, lambda c: c.admin.CreateOrg)
    list_orgs = orgs.add_parser("list", help="list orgs")
    add_paging_flags(list_orgs)
    set_call(
        list_orgs, request_of(admin_pb2.ListOrgsRequest, paged=True), lambda c: c.admin.ListOrgs
    )

    get_org = orgs.add_parser("get", help="show an org")
    get_org.add_argument("org_slug", metavar="SLUG")
    set_call(get_org, request_of(admin_pb2.GetOrgRequest, "org_slug"), lambda c: c.admin.GetOrg)

    keys = add_command_group(groups, "admin_command", "keys", help="work keys")
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
    add_repeated_choice(create_key, "--capability", "capabilities", _CAPABILITIES)
    create_key.add_argument(
        "--expire-time", type=parse_timestamp, default=None, help="RFC 3339; default never"
    )
    set_call(create_key, _key_request, lambda c: c.admin.CreateWorkKey)
    list_keys = keys.add_parser("list", help="list work keys")
    list_keys.add_argument("--org", dest="org_slug", default="")
    add_paging_flags(list_keys)
    set_call(
        list_keys,
        request_of(admin_pb2.ListWorkKeysRequest, "org_slug", paged=True),
        lambda c: c.admin.ListWorkKeys,
    )
    get_key = keys.add_parser("get", help="show a work key (never its secret)")
    get_key.add_argument("key_id", metavar="KEY_ID")
    set_call(
        get_key, request_of(admin_pb2.GetWorkKeyRequest, "key_id"), lambda c: c.admin.GetWorkKey
    )
    revoke = keys.add_parser("revoke", help="revoke a work key")
    revoke.add_argument("key_id", metavar="KEY_ID")
    set_call(
        revoke,
        request_of(admin_pb2.RevokeWorkKeyRequest, "key_id"),
        lambda c: c.admin.RevokeWorkKey,
    )

    settings = add_command_group(groups, "admin_command", "settings", help="platform settings")
    get = settings.add_parser("get", help="show the platform settings")
    set_call(get, request_of(admin_pb2.GetSettingsRequest), lambda c: c.admin.GetSettings)
    set_ = settings.add_parser("set", help="change the platform settings")
    set_.add_argument(
        "--enabled",
        type=parse_bool,
        required=True,
        metavar="true|false",
        help="the platform switch: false stops work calls, the feed and recovery passes",
    )
    set_.add_argument("--etag", default="", help="refuse the change if settings moved on")
    set_call(set_, _settings_request, lambda c: c.admin.UpdateSettings)

    add_client_flags(
        (create, list_orgs, get_org, create_key, list_keys, get_key, revoke, get, set_)
    )
    register_tenancy(groups)


def _org_request(args: argparse.Namespace) -> admin_pb2.CreateOrgRequest:
    return admin_pb2.CreateOrgRequest(
        org=admin_pb2.Org(slug=args.slug, display_name=args.display_name)
    )


def _key_request(args: argparse.Namespace) -> admin_pb2.CreateWorkKeyRequest:
    key = admin_pb2.WorkKey(
        display_name=args.display_name,
        org_slug=args.org_slug,
        coordinator_ids=args.coordinator_ids,
        capabilities=args.capabilities,
        expire_time=args.expire_time,  # None: never
    )
    return admin_pb2.CreateWorkKeyRequest(work_key=key)


def _settings_request(args: argparse.Namespace) -> admin_pb2.UpdateSettingsRequest:
    return admin_pb2.UpdateSettingsRequest(
        settings=admin_pb2.Settings(work_coordinator_enabled=args.enabled, etag=args.etag),
        update_mask=field_mask_pb2.FieldMask(paths=["work_coordinator_enabled"]),
    )
