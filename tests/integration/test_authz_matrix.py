"""The authorization matrix: every gRPC method of every workcoord service x every credential
kind (platform admin, org admins of this and another org, viewer, work keys in scope with each
capability and out of scope, revoked and expired keys, a parent with and without a live grant,
the service key, no credential), each cell asserting its exact outcome, against the real
coordinator (in-process on port 0) over real PostgreSQL.

The expectation table (:mod:`tests.integration.authz_table`) is the contract: one row per
method, one letter per credential column; the world is :mod:`tests.integration.authz_world`,
the requests :mod:`tests.integration.authz_builders`. A regression prints the exact cells that
changed, e.g. ``LaneService/CreateLane x key_read: expected D, got A``.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration import authz_world
from tests.integration.authz_builders import BUILDERS
from tests.integration.authz_table import (
    COLUMN_NAMES,
    COLUMNS,
    EXPECTED,
    OTHER_PROCESS,
    all_methods,
    call,
    outcome,
)

pytestmark = [pytest.mark.pg, pytest.mark.redis, pytest.mark.xdist_group(name="authz-matrix")]

# The module-scoped world fixture, registered here.
world = authz_world.world

METHODS = all_methods()


def _tabled(name: str) -> bool:
    """Whether ``name`` has (or must have) a row: served by the coordinator itself."""
    return name.split("/")[0] not in OTHER_PROCESS


def test_the_table_covers_every_method_of_the_contract() -> None:
    names = {name for name, _, _ in METHODS}
    served_here = {n for n in names if _tabled(n)}
    assert served_here == set(EXPECTED), (
        f"missing rows: {sorted(served_here - set(EXPECTED))}; "
        f"stale rows: {sorted(set(EXPECTED) - served_here)}"
    )
    assert set(BUILDERS) == set(EXPECTED)
    assert all(len(row) == len(COLUMNS) for row in EXPECTED.values())


@pytest.mark.parametrize(
    ("name", "request_class", "response_class"),
    [row for row in METHODS if _tabled(row[0])],
    ids=[name for name, _, _ in METHODS if _tabled(name)],
)
async def test_matrix_row(
    world: authz_world.World, name: str, request_class: Any, response_class: Any
) -> None:
    streaming = name == "FeedService/Watch"
    wrong: list[str] = []
    for column, expected in zip(COLUMNS, EXPECTED[name], strict=True):
        request = await BUILDERS[name](world, column)
        assert isinstance(request, request_class), (name, type(request))
        got = outcome(await call(world.clients[column], name, request, response_class, streaming))
        if got != expected:
            wrong.append(
                f"{name} x {COLUMN_NAMES[column]} ({column}): expected {expected}, got {got}"
            )
    assert wrong == []
