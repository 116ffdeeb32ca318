"""``workcoord admin users|members|tokens|grants``: users and org roles, admin API tokens, and
parent grants (explicit, expiring permissions a child work coordinator gives its parent).
Secrets (tokens) are printed once, in the response."""

from __future__ import annotations

import argparse

from workcoord.api.v1 import admin_pb2, work_coordinator_pb2
from workcoord.cli.common import (
    add_client_flags,
    add_command_group,
    add_paging_flags,
    add_repeated_choice,
    enum_names,
    paging,
    parse_timestamp,
    run_call,
)

__all__ = ["register_tenancy"]

_ROLES = enum_names(admin_pb2.OrgMember.Role)
_PERMISSIONS = enum_names(work_coordinator_pb2.Grant.Permission)


def register_tenancy(groups: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``users``, ``members``, ``tokens`` and ``grants`` under ``workcoord admin``."""
    parsers: list[argparse.ArgumentParser] = []

    def group(name: str, text: str) -> argparse._SubParsersAction[argparse.ArgumentParser]:
        return add_command_group(groups, "admin_command", name, help=text)

    def command(
        commands: argparse._SubParsersAction[argparse.ArgumentParser], name: str, text: str
    ) -> argparse.ArgumentParser:
        parser = commands.add_parser(name, help=text)
        parsers.append(parser)
        return parser

    users = group("users", "users (humans)")
    p = command(users, "create", "create a user (verified platform admins)")
    p.add_argument("--email", required=True)
    p.add_argument("--display-name", default="")
    p.add_argument("--platform-admin", action="store_true", help="make a platform admin")
    p.add_argument("--verified", action="store_true", help="the identity is verified")
    p.set_defaults(handler=_users_create)
    p = command(users, "list", "list users")
    add_paging_flags(p)
    p.set_defaults(handler=_users_list)

    members = group("members", "org roles")
    p = command(members, "add", "give a user a role in an org")
    p.add_argument("--org", dest="org_slug", required=True)
    p.add_argument("--user", dest="user_id", required=True, metavar="USER_ID")
    p.add_argument("--role", required=True, choices=_ROLES)
    p.set_defaults(handler=_members_add)
    p = command(members, "list", "list an org's members")
    p.add_argument("--org", dest="org_slug", required=True)
    add_paging_flags(p)
    p.set_defaults(handler=_members_list)
    p = command(members, "remove", "remove a user's role in an org")
    p.add_argument("--org", dest="org_slug", required=True)
    p.add_argument("--user", dest="user_id", required=True, metavar="USER_ID")
    p.set_defaults(handler=_members_remove)

    tokens = group("tokens", "admin API tokens")
    p = command(tokens, "create", "create an admin token for a user (its secret is shown once)")
    p.add_argument("--user", dest="user_id", required=True, metavar="USER_ID")
    p.add_argument("--display-name", default="")
    p.add_argument(
        "--expire-time", type=parse_timestamp, default=None, help="RFC 3339; default never"
    )
    p.set_defaults(handler=_tokens_create)
    p = command(tokens, "revoke", "revoke a user's admin token at once")
    p.add_argument("--user", dest="user_id", required=True, metavar="USER_ID")
    p.add_argument("token_id", metavar="TOKEN_ID")
    p.set_defaults(handler=_tokens_revoke)

    grants = group("grants", "parent grants of a child work coordinator")
    p = command(grants, "create", "grant the parent explicit, expiring permissions")
    p.add_argument("--coordinator", dest="coordinator_id", required=True, metavar="CHILD_ID")
    p.add_argument("--parent", dest="parent_id", required=True, metavar="PARENT_ID")
    add_repeated_choice(p, "--permission", "permissions", _PERMISSIONS)
    p.add_argument(
        "--expire-time", type=parse_timestamp, required=True, help="RFC 3339; at most 90 days ahead"
    )
    p.add_argument("--request-id", default="")
    p.set_defaults(handler=_grants_create)
    p = command(grants, "list", "list the grants a work coordinator gave")
    p.add_argument("--coordinator", dest="coordinator_id", required=True, metavar="CHILD_ID")
    add_paging_flags(p)
    p.set_defaults(handler=_grants_list)
    p = command(grants, "revoke", "revoke a grant at once")
    p.add_argument("--coordinator", dest="coordinator_id", required=True, metavar="CHILD_ID")
    p.add_argument("grant_id", metavar="GRANT_ID")
    p.set_defaults(handler=_grants_revoke)

    add_client_flags(parsers)


def _users_create(args: argparse.Namespace) -> int:
    user = admin_pb2.User(
        email=args.email,
        display_name=args.display_name,
        platform_admin=args.platform_admin,
        verified=args.verified,
    )
    request = admin_pb2.CreateUserRequest(user=user)
    return run_call(args, lambda client: client.admin.CreateUser(request))


def _users_list(args: argparse.Namespace) -> int:
    request = admin_pb2.ListUsersRequest(**paging(args))
    return run_call(args, lambda client: client.admin.ListUsers(request))


def _members_add(args: argparse.Namespace) -> int:
    request = admin_pb2.AddOrgMemberRequest(
        org_slug=args.org_slug, member=admin_pb2.OrgMember(user_id=args.user_id, role=args.role)
    )
    return run_call(args, lambda client: client.admin.AddOrgMember(request))


def _members_list(args: argparse.Namespace) -> int:
    request = admin_pb2.ListOrgMembersRequest(org_slug=args.org_slug, **paging(args))
    return run_call(args, lambda client: client.admin.ListOrgMembers(request))


def _members_remove(args: argparse.Namespace) -> int:
    request = admin_pb2.RemoveOrgMemberRequest(org_slug=args.org_slug, user_id=args.user_id)
    return run_call(args, lambda client: client.admin.RemoveOrgMember(request))


def _tokens_create(args: argparse.Namespace) -> int:
    token = admin_pb2.UserToken(display_name=args.display_name)
    if args.expire_time is not None:
        token.expire_time.CopyFrom(args.expire_time)
    request = admin_pb2.CreateUserTokenRequest(user_id=args.user_id, token=token)
    return run_call(args, lambda client: client.admin.CreateUserToken(request))


def _tokens_revoke(args: argparse.Namespace) -> int:
    request = admin_pb2.RevokeUserTokenRequest(user_id=args.user_id, token_id=args.token_id)
    return run_call(args, lambda client: client.admin.RevokeUserToken(request))


def _grants_create(args: argparse.Namespace) -> int:
    grant = work_coordinator_pb2.Grant(
        parent_coordinator_id=args.parent_id, permissions=args.permissions
    )
    grant.expire_time.CopyFrom(args.expire_time)
    request = work_coordinator_pb2.CreateGrantRequest(
        coordinator_id=args.coordinator_id, grant=grant, request_id=args.request_id
    )
    return run_call(args, lambda client: client.coordinators.CreateGrant(request))


def _grants_list(args: argparse.Namespace) -> int:
    request = work_coordinator_pb2.ListGrantsRequest(
        coordinator_id=args.coordinator_id, **paging(args)
    )
    return run_call(args, lambda client: client.coordinators.ListGrants(request))


def _grants_revoke(args: argparse.Namespace) -> int:
    request = work_coordinator_pb2.RevokeGrantRequest(
        coordinator_id=args.coordinator_id, grant_id=args.grant_id
    )
    return run_call(args, lambda client: client.coordinators.RevokeGrant(request))
