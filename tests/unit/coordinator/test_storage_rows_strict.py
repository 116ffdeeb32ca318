"""The SQL store's JSON objects (a coordinator's configuration and its policies, a lane's packed
``spec``) read strictly: a stored key that names no field raises, naming it, instead of being
dropped (and lost for good at the record's next write); what this release writes reads back."""

from __future__ import annotations

from typing import Any

import pytest

from tests.contract.records import coordinator, lane
from tests.unit.coordinator.test_storage_rows import row_of
from workcoord.coordinator.domain.documents import UnreadableDocument
from workcoord.coordinator.storage.sql.rows import COORDINATORS, LANES


def _coordinator_row() -> dict[str, Any]:
    return COORDINATORS.values(coordinator(), request_id="", item_seq=0)


def test_what_this_release_writes_reads_back() -> None:
    assert COORDINATORS.load(row_of(_coordinator_row(), COORDINATORS)) == coordinator()
    assert LANES.load(row_of(LANES.values(lane("ln_a"), served_turn=0), LANES)) == lane("ln_a")


def test_an_unknown_key_of_a_configuration_is_refused_by_name() -> None:
    row = _coordinator_row()
    row["config"] = {**row["config"], "escalate_after": 60}
    with pytest.raises(UnreadableDocument, match=r"stored CoordinatorConfig: escalate_after"):
        COORDINATORS.load(row_of(row, COORDINATORS))


def test_an_unknown_key_of_a_nested_policy_is_refused_by_name() -> None:
    row = _coordinator_row()
    row["config"] = {**row["config"], "retry_policy": {"max_attempts": 3}}
    with pytest.raises(UnreadableDocument, match=r"stored RetryPolicy: max_attempts"):
        COORDINATORS.load(row_of(row, COORDINATORS))


def test_an_unknown_key_of_a_packed_column_is_refused_by_name() -> None:
    row = LANES.values(lane("ln_a"), served_turn=0)
    row["spec"] = {**row["spec"], "description": "renamed from brief"}
    with pytest.raises(UnreadableDocument, match=r"stored lanes.spec: description"):
        LANES.load(row_of(row, LANES))
