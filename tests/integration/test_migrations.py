"""Upgrades and rollbacks as the runbook performs them, on real PostgreSQL and on SQLite.

"Old code" is simulated the way an older release sees the world: the same compatibility check
run with the revisions that release knew (``OLD_RELEASE``, whose head is the previous release's
last revision; one release may bring several). The schema compatibility table is what makes this
honest: the old release has no file of the newer revisions, only what the database says about
them. What the old release did not do (read the credentials epoch, from 0006) is left out of the
simulated old pod.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from tests.support.databases import PostgresDatabases, SqliteDatabases
from tests.support.harness import TestClock, start_coordinator_for
from workcoord.api.v1 import admin_pb2
from workcoord.client.client import WorkcoordClient
from workcoord.coordinator import server as coordinator_server
from workcoord.coordinator.storage.migrate import (
    SchemaMismatch,
    SchemaState,
    check_compatibility,
    check_schema,
    head,
    known_revisions,
    read_schema_state,
    upgrade_async,
)
from workcoord.coordinator.storage.sql.statements import accounts as sql_accounts

KNOWN = known_revisions()
PREVIOUS_RELEASE_HEAD = "0005"  # the last revision the release before this one shipped
OLD_RELEASE = KNOWN[: KNOWN.index(PREVIOUS_RELEASE_HEAD) + 1]


def _as_old_release(monkeypatch: pytest.MonkeyPatch) -> None:
    async def old_release_check(url: str) -> str:
        return await check_schema(url, OLD_RELEASE)

    monkeypatch.setattr(coordinator_server, "check_schema", old_release_check)
    # Nor did it read the credentials epoch (from 0006): it never reused a principal.
    old_resolve = sql_accounts.resolve_credential(with_epoch=False)
    monkeypatch.setattr(sql_accounts, "RESOLVE_CREDENTIAL", old_resolve)


def _org(slug: str) -> admin_pb2.CreateOrgRequest:
    return admin_pb2.CreateOrgRequest(org=admin_pb2.Org(slug=slug, display_name=slug))


async def execute(url: str, *statements: str) -> None:
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            for statement in statements:
                await conn.execute(text(statement))
    finally:
        await engine.dispose()


@pytest.fixture
async def empty_url(
    backend: str, pg_databases: PostgresDatabases, sqlite_databases: SqliteDatabases
) -> AsyncIterator[str]:
    if backend == "postgres":
        url = await pg_databases.create_empty()
        yield url
        await pg_databases.drop(url)
    else:
        yield f"sqlite+aiosqlite:///{sqlite_databases.directory}/mig-{secrets.token_hex(6)}.db"


def test_every_revision_declares_its_floor_and_the_head_admits_the_previous_release() -> None:
    from alembic.script import ScriptDirectory

    from workcoord.coordinator.storage import migrate

    script = ScriptDirectory.from_config(migrate._config("sqlite://"))
    for revision in KNOWN:
        floor = migrate.compatible_from(script.get_revision(revision).module, revision)
        assert floor in KNOWN[: KNOWN.index(revision) + 1], (revision, floor)
    # This release's migration is an expand: the previous release keeps running on it.
    floor = migrate.compatible_from(script.get_revision(head()).module, head())
    assert floor in OLD_RELEASE
    assert check_compatibility(SchemaState(head(), floor), OLD_RELEASE) == head()


def test_the_compatibility_rule() -> None:
    known = ["0001", "0002", "0003"]
    with pytest.raises(SchemaMismatch, match="no workcoord schema: run `workcoord db upgrade`"):
        check_compatibility(SchemaState(None, None), known)
    assert check_compatibility(SchemaState("0003", "0002"), known) == "0003"
    with pytest.raises(SchemaMismatch, match=r"behind this release.*run `workcoord db upgrade`"):
        check_compatibility(SchemaState("0002", "0002"), known)
    # Newer, and says this code may run on it (an expand or migrate revision).
    assert check_compatibility(SchemaState("0004", "0003"), known) == "0004"
    assert check_compatibility(SchemaState("0004", "0002"), known) == "0004"
    # Newer, after a contract this release does not survive.
    with pytest.raises(SchemaMismatch, match="needs code from revision 0005 on"):
        check_compatibility(SchemaState("0006", "0005"), known)
    with pytest.raises(SchemaMismatch, match="does not say which releases"):
        check_compatibility(SchemaState("0004", None), known)
    for case in (SchemaState(None, None), SchemaState("0006", "0005")):
        with pytest.raises(SchemaMismatch) as refused:
            check_compatibility(case, known)
        assert "\n" not in str(refused.value)


async def test_install_records_every_floor(empty_url: str) -> None:
    await upgrade_async(empty_url)
    state = await read_schema_state(empty_url)
    assert state.revision == head()
    assert state.compatible_from in OLD_RELEASE  # the previous release runs on it
    assert await check_schema(empty_url) == head()


async def test_upgrade_with_old_pods_running_then_roll_the_code_back(
    empty_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RUNBOOK "Upgrade" and "Rollback": the old release serves before, during and after the
    migration Job; the new one starts on the migrated schema; the old one starts again on it."""
    await upgrade_async(empty_url, OLD_RELEASE[-1])
    token, key = f"wcadm_{secrets.token_hex(16)}", f"wcsvc_{secrets.token_hex(16)}"

    # An old pod, running on its own schema.
    _as_old_release(monkeypatch)
    old_pod = await start_coordinator_for(empty_url, None, TestClock(), token, key)
    try:
        async with WorkcoordClient(old_pod.address, token) as admin:
            await admin.admin.CreateOrg(_org("before"))
            # The migration Job runs while the old pod serves.
            await upgrade_async(empty_url)
            assert (await read_schema_state(empty_url)).revision == head()
            await admin.admin.CreateOrg(_org("during"))

            # The new release starts beside it (maxSurge), on the migrated schema.
            monkeypatch.undo()
            new_pod = await start_coordinator_for(empty_url, None, TestClock(), token, key)
            try:
                async with WorkcoordClient(new_pod.address, token) as new_admin:
                    orgs = await new_admin.admin.ListOrgs(admin_pb2.ListOrgsRequest())
                    assert {"before", "during"} <= {o.slug for o in orgs.orgs}
            finally:
                await new_pod.stop(0)
    finally:
        await old_pod.stop(0)

    # Rollback of the code: the previous release starts again on the expanded schema.
    _as_old_release(monkeypatch)
    rolled_back = await start_coordinator_for(empty_url, None, TestClock(), token, key)
    try:
        async with WorkcoordClient(rolled_back.address, token) as admin:
            orgs = await admin.admin.ListOrgs(admin_pb2.ListOrgsRequest())
            assert {"before", "during"} <= {o.slug for o in orgs.orgs}
    finally:
        await rolled_back.stop(0)


async def test_after_a_contract_the_old_release_refuses_clearly(empty_url: str) -> None:
    """A later release's contract revision (simulated: 9001, which only code from our head on
    may run on) admits this release and refuses the one before, naming what to deploy."""
    await upgrade_async(empty_url)
    await execute(
        empty_url,
        "UPDATE alembic_version SET version_num = '9001'",
        f"INSERT INTO workcoord_schema_compatibility VALUES ('9001', '{head()}')",
    )
    assert await check_schema(empty_url) == "9001"
    with pytest.raises(SchemaMismatch, match=f"9001.*needs code from revision {head()} on"):
        await check_schema(empty_url, OLD_RELEASE)


async def test_request_ids_stored_before_0005_are_kept_under_their_scope(empty_url: str) -> None:
    await upgrade_async(empty_url, "0003")
    when = "2026-01-01 00:00:00+00:00"
    await execute(
        empty_url,
        "INSERT INTO work_coordinators (coordinator_id, scope, org_slug, display_name, enabled,"
        " revision, config, config_version, request_id, create_time, update_time, item_seq)"
        " VALUES"
        f" ('wc_a', 'ORG', 'acme', 'A', true, 0, '{{}}', 1, 'shared', '{when}', '{when}', 0),"
        f" ('wc_b', 'ORG', 'beta', 'B', true, 0, '{{}}', 1, 'shared', '{when}', '{when}', 0),"
        f" ('wc_c', 'ORG', 'beta', 'C', true, 0, '{{}}', 1, '', '{when}', '{when}', 0)",
        "INSERT INTO grants (grant_id, coordinator_id, parent_coordinator_id, permissions,"
        " expire_time, create_time, created_by, request_id)"
        f" VALUES ('gr_a', 'wc_a', 'wc_g', '[]', '{when}', '{when}', 'x', 'g-1')",
    )
    await upgrade_async(empty_url)
    engine = create_async_engine(empty_url)
    try:
        async with engine.connect() as conn:
            rows = (
                await conn.execute(
                    text("SELECT scope, request_id, fingerprint, resource_id FROM request_ids")
                )
            ).fetchall()
    finally:
        await engine.dispose()
    assert sorted(tuple(r) for r in rows) == [
        ("org/acme/work-coordinators", "shared", "", "wc_a"),
        ("org/beta/work-coordinators", "shared", "", "wc_b"),
        ("wc_a/grants", "g-1", "", "gr_a"),
    ]


async def test_upgrade_leaves_a_newer_schema_alone_or_says_which_release_it_needs(
    empty_url: str,
) -> None:
    """This release's ``upgrade`` on a later release's schema (simulated: 9001): nothing to do
    when the schema admits this release; one line naming both revisions and the release to
    run when it does not (never Alembic's "Can't locate revision")."""
    await upgrade_async(empty_url)
    await execute(
        empty_url,
        "UPDATE alembic_version SET version_num = '9001'",
        f"INSERT INTO workcoord_schema_compatibility VALUES ('9001', '{head()}')",
    )
    await upgrade_async(empty_url)
    assert (await read_schema_state(empty_url)).revision == "9001"

    await execute(
        empty_url,
        "UPDATE workcoord_schema_compatibility SET compatible_from = '9000' "
        "WHERE revision = '9001'",
    )
    with pytest.raises(SchemaMismatch) as refused:
        await upgrade_async(empty_url)
    assert str(refused.value) == (
        f"the database schema 9001 is newer than this release (head {head()}) and needs code "
        "from revision 9000 on: deploy that release or a newer one"
    )
    assert (await read_schema_state(empty_url)).revision == "9001"


async def test_0009_gives_each_org_work_coordinator_its_first_admin_as_digest_owner(
    empty_url: str,
) -> None:
    await upgrade_async(empty_url, "0006")
    early, late = "2026-01-01 00:00:00+00:00", "2026-02-01 00:00:00+00:00"
    owner = '{"digest_owner": "kept@acme.test"}'
    await execute(
        empty_url,
        "INSERT INTO orgs (slug, display_name, create_time) VALUES"
        f" ('acme', 'Acme', '{early}'), ('lone', 'Lone', '{early}')",
        "INSERT INTO users (user_id, email, display_name, platform_admin, verified, create_time)"
        f" VALUES ('usr_v', 'viewer@acme.test', 'V', false, true, '{early}'),"
        f" ('usr_first', 'first@acme.test', 'First', false, true, '{early}'),"
        f" ('usr_later', 'later@acme.test', 'Later', false, true, '{early}')",
        "INSERT INTO org_members (org_slug, user_id, role, create_time) VALUES"
        f" ('acme', 'usr_v', 'ORG_VIEWER', '{early}'),"
        f" ('acme', 'usr_later', 'ORG_ADMIN', '{late}'),"
        f" ('acme', 'usr_first', 'ORG_ADMIN', '{early}'),"
        f" ('lone', 'usr_v', 'ORG_VIEWER', '{early}')",
        "INSERT INTO work_coordinators (coordinator_id, scope, org_slug, display_name, enabled,"
        " revision, config, config_version, request_id, create_time, update_time, item_seq)"
        " VALUES"
        f" ('wc_none', 'ORG', 'acme', 'A', true, 4, '{{}}', 2, '', '{early}', '{early}', 0),"
        f" ('wc_kept', 'ORG', 'acme', 'K', true, 1, '{owner}', 1, '', '{early}', '{early}', 0),"
        f" ('wc_lone', 'ORG', 'lone', 'L', true, 0, '{{}}', 1, '', '{early}', '{early}', 0),"
        f" ('wc_glob', 'GLOBAL', '', 'G', true, 0, '{{}}', 1, '', '{early}', '{early}', 0)",
    )
    await upgrade_async(empty_url)
    engine = create_async_engine(empty_url)
    try:
        async with engine.connect() as conn:
            coordinators = (
                await conn.execute(
                    text(
                        "SELECT coordinator_id, revision, config, config_version"
                        " FROM work_coordinators ORDER BY coordinator_id"
                    )
                )
            ).fetchall()
            events = (
                await conn.execute(
                    text("SELECT coordinator_id, revision, type, actor, data FROM events")
                )
            ).fetchall()
    finally:
        await engine.dispose()

    def config(value: object) -> object:
        return json.loads(value) if isinstance(value, str) else value

    found = {row[0]: (row[1], config(row[2]), row[3]) for row in coordinators}
    assert found == {
        "wc_glob": (0, {}, 1),
        "wc_kept": (1, {"digest_owner": "kept@acme.test"}, 1),
        "wc_lone": (0, {}, 1),  # no admin to name: left as it was
        "wc_none": (5, {"digest_owner": "first@acme.test"}, 3),
    }
    [(cid, revision, kind, actor, data)] = events
    assert (cid, revision, kind, actor) == ("wc_none", 5, "COORDINATOR_UPDATED", "migration:0009")
    data = config(data)
    assert isinstance(data, dict)
    assert data["fields"] == ["digest_owner"] and data["digestOwner"] == "first@acme.test"
    assert "first org admin" in data["reason"]
