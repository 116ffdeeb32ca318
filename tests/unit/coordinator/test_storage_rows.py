"""The SQL store's row mapping (storage/sql/rows.py): driven by the dataclass fields, checked
against its table, tolerant of JSON written before a field existed."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

import pytest
from sqlalchemy.engine import Row

from workcoord.coordinator.domain.grants import GrantPermission, GrantRecord
from workcoord.coordinator.domain.model import (
    DEFAULT_ACTION_CLASSES,
    DEFAULT_RETRY_POLICY,
    Coordinator,
    CoordinatorConfig,
    DeadLetterReason,
    Item,
    ItemKind,
    ItemState,
    OnPass,
    RetryPolicy,
    ReviewPolicy,
    Scope,
)
from workcoord.coordinator.domain.ports import OrgRecord
from workcoord.coordinator.storage import schema
from workcoord.coordinator.storage.sql.rows import COORDINATORS, GRANTS, ITEMS, RowMap

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def row_of(values: dict[str, Any], rows: RowMap[Any]) -> Row[Any]:
    """What the mapping reads of a SQLAlchemy row: the values in the table's column order."""
    return cast(Row[Any], tuple(values[column.name] for column in rows.table.c))


def test_a_record_and_a_table_that_disagree_fail_at_construction() -> None:
    with pytest.raises(TypeError, match=r"columns without a field \['email'"):
        RowMap(OrgRecord, schema.users)


def test_nested_policies_are_json_objects_without_their_unset_fields() -> None:
    config = CoordinatorConfig(
        retry_policy=RetryPolicy(initial_interval=2.0),
        review_policy=ReviewPolicy(on_pass=OnPass.NONE),
    )
    row = COORDINATORS.values(_coordinator(config), request_id="", item_seq=0)
    assert row["config"]["retry_policy"] == {"initial_interval": 2.0}
    assert row["config"]["review_policy"] == {"on_pass": "NONE"}
    assert row["scope"] == "ORG"
    assert COORDINATORS.load(row_of(row, COORDINATORS)) == _coordinator(config)


def test_keys_missing_from_stored_json_read_back_as_the_defaults() -> None:
    row = COORDINATORS.values(_coordinator(CoordinatorConfig()), request_id="", item_seq=0)
    row["config"] = {"class_capacity": {"codex": 1}, "escalate_after_seconds": 60}
    loaded = COORDINATORS.load(row_of(row, COORDINATORS))
    assert loaded.config.class_capacity == {"codex": 1}
    assert loaded.config.retry_policy == DEFAULT_RETRY_POLICY
    assert loaded.config.allowed_action_classes == DEFAULT_ACTION_CLASSES
    # JSON gives 60.0 back as 60: a float field reads back as a float.
    assert isinstance(loaded.config.escalate_after_seconds, float)


def test_tuples_of_enums_are_stored_as_lists_of_names() -> None:
    grant = GrantRecord(
        "gr_a", "wc_a", "wc_p", (GrantPermission.STEER, GrantPermission.SUMMARY), T0, T0, "u"
    )
    row = GRANTS.values(grant)
    assert row["permissions"] == ["STEER", "SUMMARY"]
    assert GRANTS.load(row_of(row, GRANTS)) == grant


def test_a_record_of_a_plain_table_is_read_by_position_wherever_its_columns_start() -> None:
    # An item's fields are declared in another order than its table's columns, and some are
    # decoded (enums, a nested policy, an optional enum): each lands in its own field.
    item = Item(
        "it_a", "wc_a", "ln_a", "k", ItemKind.FIX, "codex", ItemState.DEAD, T0, T0,
        title="t", depends_on=["it_b"], inputs={"x": [1]}, priority=7,
        retry_policy=RetryPolicy(maximum_attempts=4), action_classes=["git"], attempt_count=2,
        attempt_seq=3, dead_letter_reason=DeadLetterReason.EXHAUSTED, evidence={"e": 1},
        current_lease_id="ls_a", ready_time=T0, held=True, seq=11, max_run_seconds=60,
    )  # fmt: skip
    row = row_of(ITEMS.values(item), ITEMS)
    assert ITEMS.load(row) == item
    joined = cast(Row[Any], ("before", 1, *row, "after"))
    assert ITEMS.load(joined, 2) == item


def _coordinator(config: CoordinatorConfig) -> Coordinator:
    return Coordinator("wc_a", Scope.ORG, "acme", "A", True, 3, config, 1, T0, T0)
