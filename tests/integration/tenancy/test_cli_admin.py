"""``workcoord admin users|members|tokens|grants`` against the real coordinator."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tests.integration.tenancy.world import create_global, in_days, set_parent
from tests.support.harness import Stack
from workcoord.cli.main import main


async def _cli(stack: Stack, capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    # main() runs its own event loop: give it a thread.
    code = await asyncio.to_thread(
        main, [*argv, "--address", stack.address, "--token", stack.admin_token]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out) if out.strip() else {}


async def test_admin_commands_over_users_members_tokens_and_grants(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    user = await _cli(stack, capsys, "admin", "users", "create", "--email", "ops@acme.test")
    user_id = user["user"]["userId"]
    listed = await _cli(stack, capsys, "admin", "users", "list")
    assert user_id in {u["userId"] for u in listed["users"]}

    await _cli(
        stack,
        capsys,
        "admin",
        "members",
        "add",
        "--org",
        stack.org,
        "--user",
        user_id,
        "--role",
        "ORG_VIEWER",
    )
    members = await _cli(stack, capsys, "admin", "members", "list", "--org", stack.org)
    assert [(m["userId"], m["role"]) for m in members["members"]] == [(user_id, "ORG_VIEWER")]
    await _cli(stack, capsys, "admin", "members", "remove", "--org", stack.org, "--user", user_id)
    members = await _cli(stack, capsys, "admin", "members", "list", "--org", stack.org)
    assert members.get("members", []) == []

    token = await _cli(
        stack, capsys, "admin", "tokens", "create", "--user", user_id, "--display-name", "ci"
    )
    assert token["secret"].startswith("wcadm_")
    revoked = await _cli(
        stack, capsys, "admin", "tokens", "revoke", "--user", user_id, token["tokenId"]
    )
    assert revoked["token"]["revokeTime"]

    parent = await create_global(stack)
    await set_parent(stack.admin, stack.cid, parent)
    expiry = in_days(stack, 7).isoformat().replace("+00:00", "Z")
    created = await _cli(
        stack,
        capsys,
        "admin",
        "grants",
        "create",
        "--coordinator",
        stack.cid,
        "--parent",
        parent,
        "--permission",
        "SUMMARY",
        "--permission",
        "STEER",
        "--expire-time",
        expiry,
    )
    made = created["grant"]
    assert made["permissions"] == ["SUMMARY", "STEER"] and made["live"]
    grants = await _cli(stack, capsys, "admin", "grants", "list", "--coordinator", stack.cid)
    assert [g["grantId"] for g in grants["grants"]] == [made["grantId"]]
    gone = await _cli(
        stack, capsys, "admin", "grants", "revoke", "--coordinator", stack.cid, made["grantId"]
    )
    assert gone["grant"]["revokeTime"] and not gone["grant"].get("live", False)
