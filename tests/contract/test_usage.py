"""Usage roll-ups: added to per coordinator, scope, key and day; read by key, by cost, by day."""

from __future__ import annotations

from dataclasses import replace

import pytest
from sqlalchemy import event

from workcoord.coordinator.domain.model import UsageScope, UsageTotal
from workcoord.coordinator.domain.ports import Store
from workcoord.coordinator.storage.sql import SqlStore

from .records import attempt, item, seed_coordinator, seed_lane

LANE = UsageScope.LANE


def total(key: str, day: str, cost: int, tokens: int = 0, cid: str = "wc_a") -> UsageTotal:
    return UsageTotal(cid, LANE, key, day, input_tokens=tokens, cost_micros=cost)


@pytest.mark.port("add_usage", "usage_totals", "usage_days")
async def test_usage_rolls_up_by_adding_and_reads_without_a_scan(store: Store) -> None:
    await seed_coordinator(store)
    async with store.write("wc_a") as tx:
        await tx.add_usage([total("ln_a", "2026-12-01", 100, 10), total("ln_b", "2026-12-01", 5)])
        await tx.add_usage([])
    async with store.write("wc_a") as tx:
        await tx.add_usage(
            [
                total("ln_a", "2026-12-01", 50, 1),
                total("ln_a", "2026-12-02", 7),
                total("ln_a", "", 157, 11),
                total("ln_a", "2026-12-01", 999, cid="wc_other"),
            ]
        )
        # Within the transaction the additions read back.
        (seen,) = await tx.usage_totals("wc_a", LANE, "2026-12-01", ["ln_a"])
        assert (seen.cost_micros, seen.input_tokens) == (150, 11)
    async with store.read() as reader:
        day = await reader.usage_totals("wc_a", LANE, "2026-12-01")
        assert [(u.key, u.cost_micros, u.input_tokens) for u in day] == [
            ("ln_a", 150, 11),
            ("ln_b", 5, 0),
        ]  # the costliest first
        assert await reader.usage_totals("wc_a", LANE, "2026-12-01", ["ln_b", "ln_x"]) == [
            total("ln_b", "2026-12-01", 5)
        ]
        assert await reader.usage_totals("wc_a", LANE, "2026-12-01", []) == []
        assert await reader.usage_totals("wc_a", UsageScope.MODEL, "2026-12-01") == []
        (ever,) = await reader.usage_totals("wc_a", LANE, "", ["ln_a"])
        assert ever.cost_micros == 157
        days = await reader.usage_days("wc_a", LANE, "ln_a", "2026-12-01")
        assert [(u.day, u.cost_micros) for u in days] == [("2026-12-01", 150), ("2026-12-02", 7)]
        later = await reader.usage_days("wc_a", LANE, "ln_a", "2026-12-02")
        assert [u.day for u in later] == ["2026-12-02"]


@pytest.mark.port("add_usage", "update_attempts", "usage_totals")
async def test_roll_ups_ride_in_the_flush_with_the_attempts(store: Store) -> None:
    """A heartbeat round's writes: attempts extended and roll-ups added, twice to one roll-up.
    On PostgreSQL nothing is written before the flush, which writes both in ONE statement; on
    every store a later transaction reads each roll-up added up once."""
    await seed_coordinator(store)
    it = item("it_a", "ln_a", seq=1)
    await seed_lane(store, it)
    running = attempt("ls_a", it)
    async with store.write("wc_a") as tx:
        await tx.insert_attempts([running])
    inner = getattr(store, "inner", None)
    engine = inner.engine.sync_engine if isinstance(inner, SqlStore) else None
    postgres = isinstance(inner, SqlStore) and inner.dialect == "postgresql"
    statements: list[str] = []

    def note(conn: object, cursor: object, statement: str, *args: object) -> None:
        statements.append(statement)

    if postgres:
        event.listen(engine, "before_cursor_execute", note)
    try:
        async with store.write() as tx:
            await tx.update_attempts([replace(running, progress="tests 80/120")])
            await tx.add_usage([total("ln_a", "2026-12-01", 100, 10), total("ln_b", "", 1)])
            await tx.add_usage([total("ln_a", "2026-12-01", 5, 1)])
            assert statements == []  # nothing written yet
    finally:
        if postgres:
            event.remove(engine, "before_cursor_execute", note)
    written = [s for s in statements if not s.startswith(("COMMIT", "ROLLBACK"))]
    if postgres:
        assert len(written) == 1, written
    async with store.read() as reader:
        (day,) = await reader.usage_totals("wc_a", LANE, "2026-12-01")
        assert (day.key, day.cost_micros, day.input_tokens) == ("ln_a", 105, 11)
        assert await reader.usage_totals("wc_a", LANE, "", ["ln_b"]) == [total("ln_b", "", 1)]
        stored = await reader.get_attempt("ls_a")
        assert stored is not None and stored.progress == "tests 80/120"
