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
    parse_timestamp,
    request_of,
    set_call,
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
    set_call(p, _user_request, lambda c: c.admin.CreateUser)
    p = command(users, "list", "list users")
    add_paging_flags(p)
    set_call(p, request_of(admin_pb2.ListUsersRequest, paged=True), lambda c: c.admin.ListUsers)
    p = command(users, "get", "show a user")
    p.add_argument("user_id", metavar="USER_ID")
    set_call(p, request_of(admin_pb2.GetUserRequest, "user_id"), lambda c: c.admin.GetUser)

    members = group("members", "org roles")
    p = command(members, "add", "give a user a role in an org")
    _add_org(p)
    _add_user(p)
    p.add_argument("--role", required=True, choices=_ROLES)
    set_call(p, _member_request, lambda c: c.admin.AddOrgMember)
    p = command(members, "list", "list an org's members")
    _add_org(p)
    add_paging_flags(p)
    set_call(
        p,
        request_of(admin_pb2.ListOrgMembersRequest, "org_slug", paged=True),
        lambda c: c.admin.ListOrgMembers,
    )
    p = command(members, "remove", "remove a user's role in an org")
    _add_org(p)
    _add_user(p)
    set_call(
        p,
        request_of(admin_pb2.RemoveOrgMemberRequest, "org_slug", "user_id"),
        lambda c: c.admin.RemoveOrgMember,
    )

    tokens = group("tokens", "admin API tokens")
    p = command(tokens, "create", "create an admin token for a user (its secret is shown once)")
    _add_user(p)
    p.add_argument("--display-name", default="")
    p.add_argument(
        "--expire-time", type=parse_timestamp, default=None, help="RFC 3339; default never"
    )
    set_call(p, _token_request, lambda c: c.admin.CreateUserToken)
    p = command(tokens, "revoke", "revoke a user's admin token at once")
    _add_user(p)
    p.add_argument("token_id", metavar="TOKEN_ID")
    set_call(
        p,
        request_of(admin_pb2.RevokeUserTokenRequest, "user_id", "token_id"),
        lambda c: c.admin.RevokeUserToken,
    )

    grants = group("grants", "parent grants of a child work coordinator")
    p = command(grants, "create", "grant the parent explicit, expiring permissions")
    _add_child(p)
    p.add_argument("--parent", dest="parent_id", required=True, metavar="PARENT_ID")
    add_repeated_choice(p, "--permission", "permissions", _PERMISSIONS)
    p.add_argument(
        "--expire-time", type=parse_timestamp, required=True, help="RFC 3339; at most 90 days ahead"
    )
    p.add_argument("--request-id", default="")
    set_call(p, _grant_request, lambda c: c.coordinators.CreateGrant)
    p = command(grants, "list", "list the grants a work coordinator gave")
    _add_child(p)
    add_paging_flags(p)
    set_call(
        p,
        request_of(work_coordinator_pb2.ListGrantsRequest, "coordinator_id", paged=True),
        lambda c: c.coordinators.ListGrants,
    )
    p = command(grants, "revoke", "revoke a grant at once")
    _add_child(p)
    p.add_argument("grant_id", metavar="GRANT_ID")
    set_call(
        p,
        request_of(work_coordinator_pb2.RevokeGrantRequest, "coordinator_id", "grant_id"),
        lambda c: c.coordinators.RevokeGrant,
    )

    add_client_flags(parsers)


def _add_org(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--org", dest="org_slug", required=True)


def _add_user(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--user", dest="user_id", required=True, metavar="USER_ID")


def _add_child(parser: argparse.ArgumentParser) -> None:
    """The child work coordinator whose grants a command handles."""
    parser.add_argument("--coordinator", dest="coordinator_id", required=True, metavar="CHILD_ID")


def _user_request(args: argparse.Namespace) -> admin_pb2.CreateUserRequest:
    user = admin_pb2.User(
        email=args.email,
        display_name=args.display_name,
        platform_admin=args.platform_admin,
        verified=args.verified,
    )
    return admin_pb2.CreateUserRequest(user=user)


def _member_request(args: argparse.Namespace) -> admin_pb2.AddOrgMemberRequest:
    return admin_pb2.AddOrgMemberRequest(
        org_slug=args.org_slug, member=admin_pb2.OrgMember(user_id=args.user_id, role=args.role)
    )


def _token_request(args: argparse.Namespace) -> admin_pb2.CreateUserTokenRequest:
    token = admin_pb2.UserToken(display_name=args.display_name, expire_time=args.expire_time)
    return admin_pb2.CreateUserTokenRequest(user_id=args.user_id, token=token)


def _grant_request(args: argparse.Namespace) -> work_coordinator_pb2.CreateGrantRequest:
    grant = work_coordinator_pb2.Grant(
        parent_coordinator_id=args.parent_id,
        permissions=args.permissions,
        expire_time=args.expire_time,
    )
    return work_coordinator_pb2.CreateGrantRequest(
        coordinator_id=args.coordinator_id, grant=grant, request_id=args.request_id
    )
