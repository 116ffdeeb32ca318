"""The recovery service's Prometheus metrics (default registry; see ``workcoord.kit.metrics``).

``workcoord_recovery_leader`` is 1 on the replica that holds leadership, so
``sum(workcoord_recovery_leader) == 0`` means nobody runs passes. A pass counts as failed when
listing the work coordinators or the pass over any one of them failed. The work a pass did is
counted per kind from the coordinators' reports (``kind`` is a fixed set of report fields).
A step that failed while the rest of a pass ran (a tracker unreachable) is counted per step
(``step`` is ``MAINTENANCE_STEPS``, or ``other`` for a step this release does not know).
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from workcoord.kit.wire import MAINTENANCE_COUNTERS, MAINTENANCE_STEPS

__all__ = [
    "LAST_SUCCESSFUL_PASS",
    "LEADER",
    "PASSES",
    "PASS_DURATION",
    "PASS_WORK",
    "STEP_FAILURES",
    "step_label",
]

PASS_DURATION = Histogram(
    "workcoord_recovery_pass_duration_seconds",
    "Time one recovery pass took over every enabled work coordinator.",
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120),
)
PASSES = Counter(
    "workcoord_recovery_passes_total",
    "Recovery passes run by this replica, by outcome (ok or failed).",
    ["outcome"],
)
LAST_SUCCESSFUL_PASS = Gauge(
    "workcoord_recovery_last_success_timestamp_seconds",
    "Unix time of this replica's latest pass without errors (0: none yet).",
)
LEADER = Gauge(
    "workcoord_recovery_leader",
    "1 while this replica holds the recovery leadership, else 0.",
)
PASS_WORK = Counter(
    "workcoord_recovery_work_total",
    f"What recovery passes did, by kind ({', '.join(MAINTENANCE_COUNTERS)}).",
    ["kind"],
)

STEP_FAILURES = Counter(
    "workcoord_recovery_step_failures_total",
    "Passes over a work coordinator in which a step failed while the rest ran, by step.",
    ["step"],
)

MAIL_MESSAGES = Counter(
    "workcoord_mail_messages_total",
    "Mail to digest owners by outcome: sent, or failed (a work coordinator's round that failed).",
    ["outcome"],
)

# Both outcomes exist from the start, so "failed" reads 0 (not absent) until a pass fails.
for _outcome in ("ok", "failed"):
    PASSES.labels(_outcome)
for _outcome in ("sent", "failed"):
    MAIL_MESSAGES.labels(_outcome)
for _step in (*MAINTENANCE_STEPS, "other"):
    STEP_FAILURES.labels(_step)


def step_label(step: str) -> str:
    """The ``step`` label of a reported step: a known one, else ``other`` (bounded labels)."""
    return step if step in MAINTENANCE_STEPS else "other"
