"""``workcoord_tokens_total`` and ``workcoord_cost_micros_total``: counted from the usage roll-ups
a write added to, once it committed (never for a write that rolled back)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from prometheus_client import REGISTRY

from tests.contract.records import T0, attempt, item, seed_coordinator
from workcoord.coordinator.domain import usage
from workcoord.coordinator.domain.specs import Usage
from workcoord.coordinator.metrics import MeteredStore
from workcoord.coordinator.storage.memory import MemoryStore
from workcoord.kit.clock import ManualClock


def _sample(name: str, model: str) -> float:
    labels = {"coordinator": "wc_a", "worker_class": "codex", "model": model}
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_spend_is_counted_by_coordinator_class_and_model_at_commit() -> None:
    store = MemoryStore(ManualClock(T0))
    await seed_coordinator(store)
    metered = MeteredStore(store)
    spender = replace(attempt("ls_m", item("it_m", "ln_m")), worker_class="codex")
    added = Usage(input_tokens=100, output_tokens=20, cost_micros=5000, model="metered-model")
    tokens_before = _sample("workcoord_tokens_total", "metered-model")
    cost_before = _sample("workcoord_cost_micros_total", "metered-model")
    async with metered.write("wc_a") as tx:
        await tx.add_usage(usage.rollups(spender, added, T0))
    assert _sample("workcoord_tokens_total", "metered-model") == tokens_before + 120
    assert _sample("workcoord_cost_micros_total", "metered-model") == cost_before + 5000
    with pytest.raises(RuntimeError):
        async with metered.write("wc_a") as tx:
            await tx.add_usage(usage.rollups(spender, added, T0))
            raise RuntimeError("rolled back")
    assert _sample("workcoord_cost_micros_total", "metered-model") == cost_before + 5000
