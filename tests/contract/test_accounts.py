"""The platform switch, orgs, users and roles, credentials, and leaderships."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace

import pytest

from workcoord.coordinator.domain.grants import TokenRecord
from workcoord.coordinator.domain.ports import (
    Credential,
    Leadership,
    OrgRecord,
    ResolvedCredential,
    Store,
    Tx,
    WorkKeyRecord,
)
from workcoord.kit.clock import ManualClock

from .records import T0, at, seed_coordinator, user

HASH_A = "a" * 64
HASH_B = "b" * 64


def work_key(key_id: str, org_slug: str = "acme", secret_hash: str = HASH_B) -> WorkKeyRecord:
    return WorkKeyRecord(
        key_id=key_id,
        display_name=f"Key {key_id}",
        org_slug=org_slug,
        coordinator_ids=("wc_a", "wc_b"),
        capabilities=("READ", "LEASE"),
        secret_hash=secret_hash,
        create_time=T0,
        created_by="usr_admin",
        expire_time=at(3600),
    )


@pytest.mark.port("platform_enabled", "settings_row", "set_platform_enabled")
async def test_the_platform_switch_starts_on_and_counts_its_changes(
    store: Store, clock: ManualClock
) -> None:
    async with store.read() as reader:
        assert await reader.platform_enabled() is True
        assert await reader.settings_row() == (True, T0, 0)
    async with store.write() as tx:
        await tx.set_platform_enabled(False, at(5))
    async with store.read() as reader:
        assert await reader.platform_enabled() is False
        assert await reader.settings_row() == (False, at(5), 2)
    async with store.write() as tx:
        await tx.set_platform_enabled(True, at(6))
    async with store.read() as reader:
        assert await reader.settings_row() == (True, at(6), 3)


async def test_the_first_coordinator_creates_the_settings(store: Store, clock: ManualClock) -> None:
    clock.advance(4)
    await seed_coordinator(store)
    async with store.read() as reader:
        assert await reader.settings_row() == (True, at(4), 1)


@pytest.mark.port("insert_org", "get_org", "list_orgs")
async def test_orgs_by_slug(store: Store) -> None:
    async with store.write() as tx:
        for slug in ("beta", "acme", "gamma"):
            await tx.insert_org(OrgRecord(slug, slug.title(), at(len(slug))))
    async with store.read() as reader:
        assert await reader.get_org("acme") == OrgRecord("acme", "Acme", at(4))
        assert await reader.get_org("nope") is None
        assert [o.slug for o in await reader.list_orgs("", 10)] == ["acme", "beta", "gamma"]
        assert [o.slug for o in await reader.list_orgs("acme", 10)] == ["beta", "gamma"]
        assert [o.slug for o in await reader.list_orgs("", 2)] == ["acme", "beta"]


@pytest.mark.port("insert_user", "get_user", "find_user_by_email", "list_users")
async def test_users_by_id_and_email(store: Store) -> None:
    admin = replace(user("usr_b"), platform_admin=True, verified=False)
    async with store.write() as tx:
        for record in (admin, user("usr_a"), user("usr_c")):
            await tx.insert_user(record)
    async with store.write() as tx:
        assert await tx.get_user("usr_b") == admin
        assert await tx.get_user("usr_x") is None
        assert await tx.find_user_by_email("usr_b@acme.test") == admin
        assert await tx.find_user_by_email("USR_B@acme.test") is None
        assert [u.user_id for u in await tx.list_users("", 10)] == ["usr_a", "usr_b", "usr_c"]
        assert [u.user_id for u in await tx.list_users("usr_a", 1)] == ["usr_b"]


@pytest.mark.port("set_member", "user_roles")
async def test_set_member_adds_or_changes_a_role(store: Store) -> None:
    async with store.write() as tx:
        for slug in ("acme", "beta"):
            await tx.insert_org(OrgRecord(slug, slug, T0))
        await tx.insert_user(user("usr_a"))
        await tx.insert_user(user("usr_b"))
        await tx.set_member("acme", "usr_a", "ADMIN", at(1))
        await tx.set_member("beta", "usr_a", "MEMBER", at(1))
        await tx.set_member("acme", "usr_b", "MEMBER", at(1))
    async with store.write() as tx:
        await tx.set_member("acme", "usr_a", "MEMBER", at(2))
    async with store.read() as reader:
        assert await reader.user_roles("usr_a") == {"acme": "MEMBER", "beta": "MEMBER"}
        assert await reader.user_roles("usr_b") == {"acme": "MEMBER"}
        assert await reader.user_roles("usr_x") == {}
        member = await reader.get_member("acme", "usr_a")
    assert member is not None and (member.role, member.create_time) == ("MEMBER", at(1))


@pytest.mark.port("insert_user_token", "insert_work_key", "find_credential", "revoke_work_key")
async def test_a_credential_is_found_by_its_secret_hash(store: Store) -> None:
    async with store.write() as tx:
        await tx.insert_user(user("usr_a"))
        await tx.insert_user_token(TokenRecord("tok_a", "usr_a", "laptop", T0, at(60)), HASH_A)
        await tx.insert_work_key(work_key("key_a"))
    async with store.write() as tx:
        assert await tx.find_credential(HASH_A) == Credential(
            "user_token", "tok_a", "usr_a", at(60), None
        )
        assert await tx.find_credential(HASH_B) == Credential(
            "work_key", "key_a", "key_a", at(3600), None
        )
        assert await tx.find_credential("c" * 64) is None
        await tx.revoke_work_key("key_a", at(9))
        await tx.revoke_work_key("key_missing", at(9))  # no-op
    async with store.read() as reader:
        credential = await reader.find_credential(HASH_B)
        key = await reader.get_work_key("key_a")
        token = await reader.get_user_token("tok_a")
    assert credential is not None and credential.revoke_time == at(9)
    assert key == replace(work_key("key_a"), revoke_time=at(9))
    # A user token never carries its secret's hash out of the store.
    assert token is not None and not hasattr(token, "secret_hash")


@pytest.mark.port("resolve_credential")
async def test_a_credential_resolves_with_its_owner_in_one_read(store: Store) -> None:
    async with store.write() as tx:
        for slug in ("acme", "beta"):
            await tx.insert_org(OrgRecord(slug, slug, T0))
        await tx.insert_user(user("usr_a"))
        await tx.insert_user(user("usr_b"))
        await tx.set_member("acme", "usr_a", "ORG_ADMIN", at(1))
        await tx.set_member("beta", "usr_a", "ORG_VIEWER", at(1))
        await tx.insert_user_token(TokenRecord("tok_a", "usr_a", "laptop", T0, at(60)), HASH_A)
        await tx.insert_user_token(TokenRecord("tok_b", "usr_b", "laptop", T0), "c" * 64)
        await tx.insert_work_key(work_key("key_a"))
    async with store.read(snapshot=False) as reader:
        by_token = await reader.resolve_credential(HASH_A)
        roleless = await reader.resolve_credential("c" * 64)
        by_key = await reader.resolve_credential(HASH_B)
        unknown = await reader.resolve_credential("d" * 64)
    assert by_token == ResolvedCredential(
        Credential("user_token", "tok_a", "usr_a", at(60), None),
        user=user("usr_a"),
        roles={"acme": "ORG_ADMIN", "beta": "ORG_VIEWER"},
    )
    assert roleless == ResolvedCredential(
        Credential("user_token", "tok_b", "usr_b", None, None), user=user("usr_b"), roles={}
    )
    assert by_key == ResolvedCredential(
        Credential("work_key", "key_a", "key_a", at(3600), None), work_key=work_key("key_a")
    )
    assert unknown is None


@pytest.mark.port("credentials_epoch")
async def test_every_change_to_credentials_users_or_roles_moves_the_epoch(store: Store) -> None:
    async with store.read(snapshot=False) as reader:
        assert await reader.credentials_epoch() is None  # no platform settings yet
    await seed_coordinator(store)

    async def epoch() -> int:
        async with store.read(snapshot=False) as reader:
            found = await reader.credentials_epoch()
        assert found is not None
        return found

    seen = [await epoch()]
    changes: list[Callable[[Tx], Awaitable[object]]] = [
        lambda tx: tx.insert_org(OrgRecord("acme", "acme", T0)),
        lambda tx: tx.insert_user(user("usr_a")),
        lambda tx: tx.set_member("acme", "usr_a", "ORG_VIEWER", at(1)),
        lambda tx: tx.set_member("acme", "usr_a", "ORG_ADMIN", at(2)),
        lambda tx: tx.insert_user_token(TokenRecord("tok_a", "usr_a", "laptop", T0), HASH_A),
        lambda tx: tx.insert_work_key(work_key("key_a")),
        lambda tx: tx.revoke_work_key("key_a", at(3)),
        lambda tx: tx.revoke_user_token("tok_a", at(4)),
        lambda tx: tx.remove_member("acme", "usr_a"),
    ]
    for index, change in enumerate(changes):
        async with store.write() as tx:
            await change(tx)
        seen.append(await epoch())
        if index == 0:  # an org is not a credential: the epoch may stay
            assert seen[-1] >= seen[-2]
        else:
            assert seen[-1] > seen[-2], f"change {index} did not move the epoch"
    async with store.write() as tx:
        await tx.set_platform_enabled(False, at(5))  # keeps the epoch
    assert await epoch() == seen[-1]
    async with store.read(snapshot=False) as reader:
        resolved = await reader.resolve_credential(HASH_B)
    assert resolved is not None and resolved.epoch == seen[-1]


@pytest.mark.port("locked_credentials_epoch")
async def test_the_coordinators_lock_reads_the_credentials_epoch(store: Store) -> None:
    seeded = await seed_coordinator(store)

    async def locked_epoch() -> int | None:
        async with store.write(seeded.coordinator_id) as tx:
            assert tx.coordinator is not None
            epoch = tx.locked_credentials_epoch
            assert epoch == await tx.credentials_epoch()
            return epoch

    async with store.write() as tx:  # no coordinator locked: nothing read
        assert tx.locked_credentials_epoch is None
    before = await locked_epoch()
    assert before is not None
    async with store.write() as tx:
        await tx.insert_work_key(work_key("key_a"))
    after = await locked_epoch()
    assert after is not None and after > before


@pytest.mark.port("get_work_key", "list_work_keys")
async def test_work_keys_by_org_and_id(store: Store) -> None:
    keys = [
        work_key("key_c", "acme", "c" * 64),
        work_key("key_a", "acme", "a" * 64),
        work_key("key_b", "beta", "b" * 64),
    ]
    async with store.write() as tx:
        for key in keys:
            await tx.insert_work_key(key)
    async with store.read() as reader:
        assert await reader.get_work_key("key_a") == keys[1]
        assert await reader.get_work_key("key_x") is None

        async def ids(org: str, after: str, limit: int) -> list[str]:
            return [k.key_id for k in await reader.list_work_keys(org, after, limit)]

        assert await ids("", "", 10) == ["key_a", "key_b", "key_c"]
        assert await ids("acme", "", 10) == ["key_a", "key_c"]
        assert await ids("acme", "key_a", 10) == ["key_c"]
        assert await ids("", "", 2) == ["key_a", "key_b"]


@pytest.mark.port("acquire_leadership", "release_leadership")
async def test_leadership_is_held_until_it_expires_or_is_released(
    store: Store, clock: ManualClock
) -> None:
    async with store.write() as tx:
        assert await tx.acquire_leadership("recovery", "a", at(0), at(30)) == Leadership(
            "recovery", "a", at(30), 1
        )
        # Another candidate meets the current holder.
        assert await tx.acquire_leadership("recovery", "b", at(10), at(40)) == Leadership(
            "recovery", "a", at(30), 1
        )
        # The holder renews within its term.
        assert await tx.acquire_leadership("recovery", "a", at(20), at(50)) == Leadership(
            "recovery", "a", at(50), 1
        )
        assert await tx.acquire_leadership("other", "b", at(0), at(5)) == Leadership(
            "other", "b", at(5), 1
        )
    async with store.write() as tx:
        # Expired: the next candidate takes over with a new term.
        assert await tx.acquire_leadership("recovery", "b", at(50), at(80)) == Leadership(
            "recovery", "b", at(80), 2
        )
    clock.advance(60)
    async with store.write() as tx:
        assert await tx.release_leadership("recovery", "a") == Leadership(
            "recovery", "b", at(80), 2
        )
        assert await tx.release_leadership("recovery", "b") == Leadership(
            "recovery", "b", at(60), 2
        )
        assert await tx.release_leadership("nobody", "b") is None
    async with store.write() as tx:
        assert await tx.acquire_leadership("recovery", "a", at(61), at(90)) == Leadership(
            "recovery", "a", at(90), 3
        )


@pytest.mark.port("seen_credentials_epoch")
async def test_a_coordinator_read_in_a_write_sees_the_credentials_epoch(store: Store) -> None:
    seeded = await seed_coordinator(store)
    async with store.write() as tx:
        assert tx.seen_credentials_epoch is None  # nothing read yet
        assert await tx.get_coordinator("wc_missing") is None
        assert tx.seen_credentials_epoch is None  # no row, no epoch
        assert await tx.get_coordinator(seeded.coordinator_id) is not None
        before = tx.seen_credentials_epoch
        assert before is not None and before == await tx.credentials_epoch()
    async with store.write() as tx:
        await tx.insert_work_key(work_key("key_b"))
    async with store.write() as tx:
        await tx.get_coordinator(seeded.coordinator_id)
        after = tx.seen_credentials_epoch
        assert after is not None and after > before
