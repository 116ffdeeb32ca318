"""A broken unique key that means "already exists" answers ALREADY_EXISTS; any other broken
constraint is a bug: INTERNAL, logged with the constraint's name and never the row's values."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace

import pytest

from workcoord.coordinator.domain.grants import TokenRecord
from workcoord.coordinator.domain.model import EventType, NewEvent, Ticket
from workcoord.coordinator.domain.ports import (
    OrgRecord,
    RequestRecord,
    Store,
    Tx,
    WorkKeyRecord,
)
from workcoord.kit.errors import AlreadyExists, Internal

from .records import T0, attempt, item, lane, seed_coordinator, seed_lane, user

SECRET_HASH = "5ec7e7" * 10 + "abcd"
TOKEN_HASH = "70ce11" * 10 + "abcd"
Change = Callable[[Tx], Awaitable[None]]


def _key(key_id: str) -> WorkKeyRecord:
    return WorkKeyRecord(key_id, "fleet", "acme", ("wc_a",), ("READ",), SECRET_HASH, T0, "usr_a")


async def _seeded(store: Store) -> None:
    await seed_coordinator(store)
    await seed_lane(store, item("it_a", "ln_a", seq=1), record=lane("ln_a", request_id="req-1"))
    async with store.write("wc_a") as tx:
        await tx.insert_org(OrgRecord("acme", "Acme", T0))
        await tx.insert_user(user("usr_a", "a@acme.test"))
        await tx.insert_ticket("wc_a", Ticket("ln_a", "github", "acme/parser#12"))
        await tx.insert_work_key(_key("key_a"))
        await tx.insert_user_token(TokenRecord("tok_a", "usr_a", "bootstrap", T0), TOKEN_HASH)
        await tx.insert_attempts([attempt("ls_a", item("it_a", "ln_a"), exclusive_key="k")])
        await tx.insert_request(RequestRecord("wc_a/lanes", "req-1", "f1", "ln_a", T0))


async def _append_at_a_stale_revision(tx: Tx) -> None:
    assert tx.coordinator is not None
    await tx.append(tx.coordinator, [NewEvent(EventType.LANE_DONE)], "x")
    # The caller forgot to move its revision: the next event reuses revision 1.
    await tx.append(tx.coordinator, [NewEvent(EventType.LANE_DONE)], "x")


async def _second_item_of_lane(tx: Tx) -> None:
    await tx.insert_items([item("it_b", "ln_a", seq=2)])


ALREADY_EXISTS: dict[str, Change] = {
    "pk_orgs": lambda tx: tx.insert_org(OrgRecord("acme", "Other", T0)),
    "uq_users_email": lambda tx: tx.insert_user(user("usr_b", "a@acme.test")),
    "uq_lanes_request": lambda tx: tx.insert_lane(lane("ln_b", request_id="req-1")),
    "pk_request_ids": lambda tx: tx.insert_request(
        RequestRecord("wc_a/lanes", "req-1", "f2", "ln_b", T0)
    ),
    "pk_tickets": lambda tx: tx.insert_ticket("wc_a", Ticket("ln_a", "github", "acme/parser#12")),
    "uq_user_tokens_secret_hash": lambda tx: tx.insert_user_token(
        TokenRecord("tok_b", "usr_a", "again", T0), TOKEN_HASH
    ),
}

INTERNAL: dict[str, Change] = {
    "pk_users": lambda tx: tx.insert_user(user("usr_a", "other@acme.test")),
    "pk_lanes": lambda tx: tx.insert_lane(lane("ln_a")),
    "uq_items_lane_id_key": lambda tx: tx.insert_items([replace(item("it_b", "ln_a"), key="it_a")]),
    "uq_work_keys_secret_hash": lambda tx: tx.insert_work_key(_key("key_b")),
    "uq_attempts_one_live_per_item": lambda tx: tx.insert_attempts(
        [attempt("ls_b", item("it_a", "ln_a"))]
    ),
    "pk_exclusive_holds": lambda tx: _hold_k_twice(tx),
    "pk_events": _append_at_a_stale_revision,
    "fk_items_lane_id_lanes": lambda tx: tx.insert_items([item("it_b", "ln_missing")]),
}


async def _hold_k_twice(tx: Tx) -> None:
    await _second_item_of_lane(tx)
    await tx.insert_attempts([attempt("ls_b", item("it_b", "ln_a"), exclusive_key="k")])


@pytest.mark.parametrize("constraint", sorted(ALREADY_EXISTS))
async def test_a_caller_chosen_key_taken_twice_already_exists(
    store: Store, constraint: str
) -> None:
    await _seeded(store)
    with pytest.raises(AlreadyExists):
        async with store.write("wc_a") as tx:
            await ALREADY_EXISTS[constraint](tx)


@pytest.mark.parametrize("constraint", sorted(INTERNAL))
async def test_any_other_broken_constraint_is_an_internal_error_logged_by_name(
    store: Store, store_kind: str, constraint: str, caplog: pytest.LogCaptureFixture
) -> None:
    await _seeded(store)
    caplog.set_level(logging.ERROR)
    with pytest.raises(Internal) as raised:
        async with store.write("wc_a") as tx:
            await INTERNAL[constraint](tx)
    logged = [r.getMessage() for r in caplog.records if "integrity" in r.getMessage()]
    assert len(logged) == 1
    if store_kind == "sqlite" and constraint.startswith("fk_"):
        # SQLite does not name foreign keys; its error code says which kind broke.
        assert logged[0].endswith("SQLITE_CONSTRAINT_FOREIGNKEY")
    else:
        assert logged[0].endswith(constraint)
    # The row's values stay out of the log and the answer.
    assert SECRET_HASH not in caplog.text and SECRET_HASH not in str(raised.value)
    async with store.read() as reader:
        assert await reader.get_item("it_b") is None
