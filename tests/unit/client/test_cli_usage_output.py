"""``workcoord view`` and ``workcoord why`` as tables: the work coordinator's day spend, each
lane's cost, and what the lane or item spent."""

from __future__ import annotations

from workcoord.api.v1 import lane_pb2, work_coordinator_pb2
from workcoord.cli.output import render_table

W = work_coordinator_pb2


def test_the_view_shows_each_lanes_cost_and_the_days_spend() -> None:
    view = W.View(
        revision=7,
        lanes=[
            lane_pb2.Lane(lane_id="ln_costly", title="big"),
            lane_pb2.Lane(lane_id="ln_idle", title="small"),
        ],
        day_usage=lane_pb2.UsageTotal(key="2026-12-01", cost_micros=1_234_567, tokens=4200),
        lane_usage=[lane_pb2.UsageTotal(key="ln_costly", cost_micros=950_000, tokens=90)],
    )
    lines = render_table(view).splitlines()
    assert "COST" in lines[2]
    (costly,) = [line for line in lines if line.startswith("ln_costly")]
    (idle,) = [line for line in lines if line.startswith("ln_idle")]
    assert "$0.95" in costly
    assert "$" not in idle and " - " in idle
    assert "spent today: $1.23 (4,200 tokens)" in lines


def test_an_empty_view_spent_nothing_today() -> None:
    assert "spent today: $0.00 (0 tokens)" in render_table(W.View(revision=1)).splitlines()


def test_why_says_what_the_lane_and_the_work_coordinator_spent() -> None:
    why = W.Explanation(
        lane_id="ln_1",
        state="ACTIVE",
        usage=lane_pb2.UsageTotal(cost_micros=400_000, tokens=1500),
        day_usage=lane_pb2.UsageTotal(key="2026-12-01", cost_micros=2_500_000, tokens=9000),
    )
    lines = render_table(why).splitlines()
    assert lines[1] == ("spent: $0.40 (1,500 tokens)  work coordinator today: $2.50 (9,000 tokens)")
    nothing = render_table(W.Explanation(lane_id="ln_2")).splitlines()
    assert nothing[1] == "spent: $0.00 (0 tokens)  work coordinator today: $0.00 (0 tokens)"
