"""Pure rules: backoff, fencing, DAG checks, placement, sensitive phrases, labels."""

from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workcoord.coordinator.domain import rules
from workcoord.coordinator.domain.leasability import Surroundings
from workcoord.coordinator.domain.model import (
    DEFAULT_RETRY_POLICY,
    Attempt,
    AttemptStatus,
    Item,
    ItemKind,
    ItemState,
    Lane,
    LaneState,
    RetryPolicy,
    Template,
    Worker,
)
from workcoord.kit.errors import FieldViolation, IllegalTransition, LeaseLost
from workcoord.kit.secrets import hash_secret

NOW = datetime(2026, 1, 1, tzinfo=UTC)

# --------------------------------------------------------------------------- retry_delay


@pytest.mark.parametrize(
    ("attempts", "nominal"),
    [(0, 5.0), (1, 5.0), (2, 15.0), (3, 45.0), (4, 135.0), (5, 300.0), (6, 300.0), (60, 300.0)],
)
def test_retry_delay_grows_by_three_and_caps_at_five_minutes(attempts: int, nominal: float) -> None:
    assert rules.retry_delay(DEFAULT_RETRY_POLICY, attempts, lambda: 0.5) == pytest.approx(nominal)
    low = rules.retry_delay(DEFAULT_RETRY_POLICY, attempts, lambda: 0.0)
    high = rules.retry_delay(DEFAULT_RETRY_POLICY, attempts, lambda: 0.999999)
    assert low == pytest.approx(nominal * 0.9)
    assert high == pytest.approx(nominal * 1.1, rel=1e-5)


@given(attempts=st.integers(min_value=0, max_value=10_000), u=st.floats(0.0, 0.9999999))
def test_retry_delay_stays_within_jitter_bounds(attempts: int, u: float) -> None:
    delay = rules.retry_delay(DEFAULT_RETRY_POLICY, attempts, lambda: u)
    nominal = min(5.0 * 3.0 ** max(attempts - 1, 0), 300.0) if attempts < 64 else 300.0
    assert nominal * 0.9 - 1e-9 <= delay <= nominal * 1.1 + 1e-9


def test_retry_delay_honours_a_custom_policy() -> None:
    policy = RetryPolicy(initial_interval=2.0, backoff_coefficient=2.0, maximum_interval=10.0)
    assert [rules.retry_delay(policy, n, lambda: 0.5) for n in (1, 2, 3, 4, 5)] == [
        2.0,
        4.0,
        8.0,
        10.0,
        10.0,
    ]


def _item(**kwargs: object) -> Item:
    base = Item(
        item_id="it_1",
        coordinator_id="wc_1",
        lane_id="ln_1",
        key="a",
        kind=ItemKind.TASK,
        worker_class="codex",
        state=ItemState.QUEUED,
        create_time=NOW,
        update_time=NOW,
    )
    return replace(base, **kwargs)  # type: ignore[arg-type]


def test_attempts_remaining_counts_against_the_maximum() -> None:
    policy = RetryPolicy(maximum_attempts=3)
    assert rules.attempts_remaining(policy, _item(attempt_count=2))
    assert not rules.attempts_remaining(policy, _item(attempt_count=3))


# --------------------------------------------------------------------------- fence

TOKEN = "wcl_the-right-token"


def _attempt(**kwargs: object) -> Attempt:
    base = Attempt(
        lease_id="ls_1",
        coordinator_id="wc_1",
        item_id="it_1",
        lane_id="ln_1",
        attempt=1,
        status=AttemptStatus.RUNNING,
        token_hash=hash_secret(TOKEN),
        worker_id="w1",
        worker_class="codex",
        principal="key:k",
        lease_seconds=60,
        lease_expire_time=NOW + timedelta(seconds=60),
        create_time=NOW,
    )
    return replace(base, **kwargs)  # type: ignore[arg-type]


def test_fence_accepts_the_current_live_lease() -> None:
    for status in (AttemptStatus.LEASED, AttemptStatus.RUNNING):
        rules.fence(_attempt(status=status), _item(current_lease_id="ls_1"), TOKEN, NOW)


def _cause(attempt: Attempt | None, item: Item | None, token: str, now: datetime) -> str:
    with pytest.raises(LeaseLost) as caught:
        rules.fence(attempt, item, token, now)
    assert caught.value.reason == "LEASE_LOST"
    return caught.value.cause


def test_fence_refuses_an_unknown_lease() -> None:
    assert _cause(None, None, TOKEN, NOW) == "superseded"


def test_fence_refuses_a_wrong_token() -> None:
    assert _cause(_attempt(), _item(current_lease_id="ls_1"), "wcl_wrong", NOW) == "superseded"


def test_fence_refuses_the_moment_the_lease_expires() -> None:
    item = _item(current_lease_id="ls_1")
    expiry = NOW + timedelta(seconds=60)
    rules.fence(_attempt(), item, TOKEN, expiry - timedelta(microseconds=1))
    assert _cause(_attempt(), item, TOKEN, expiry) == "expired"


def test_fence_refuses_a_swept_lease_as_expired() -> None:
    dead = _attempt(status=AttemptStatus.DEAD)
    assert _cause(dead, _item(current_lease_id="ls_1"), TOKEN, NOW) == "expired"


@pytest.mark.parametrize(
    "status",
    [
        AttemptStatus.COMPLETED,
        AttemptStatus.FAILED,
        AttemptStatus.CHECKPOINTED,
        AttemptStatus.RELEASED,
    ],
)
def test_fence_refuses_an_ended_attempt(status: AttemptStatus) -> None:
    assert _cause(_attempt(status=status), _item(current_lease_id=""), TOKEN, NOW) == "terminal"


def test_fence_refuses_a_superseded_attempt() -> None:
    assert _cause(_attempt(), _item(current_lease_id="ls_2"), TOKEN, NOW) == "superseded"


def test_require_running() -> None:
    rules.require_running(_attempt(), "complete")
    with pytest.raises(IllegalTransition):
        rules.require_running(_attempt(status=AttemptStatus.LEASED), "complete")


# --------------------------------------------------------------------------- DAG


def _fields(violations: list[FieldViolation]) -> list[str]:
    return [v.field for v in violations]


def test_dag_accepts_a_diamond() -> None:
    keys = ["a", "b", "c", "d"]
    deps = [[], ["a"], ["a"], ["b", "c"]]
    assert rules.dag_violations(keys, deps) == []


def test_dag_reports_duplicates_and_missing_keys() -> None:
    violations = rules.dag_violations(["a", "a", ""], [[], [], []])
    assert _fields(violations) == ["lane.items[1].key", "lane.items[2].key"]
    assert "duplicates" in violations[0].description


def test_dag_reports_unknown_and_self_dependencies() -> None:
    violations = rules.dag_violations(["a", "b"], [["a"], ["zzz"]], path="items")
    assert _fields(violations) == ["items[0].depends_on[0]", "items[1].depends_on[0]"]
    assert "itself" in violations[0].description
    assert "zzz" in violations[1].description


def test_dag_reports_a_cycle_with_its_path() -> None:
    violations = rules.dag_violations(["a", "b", "c"], [["c"], ["a"], ["b"]])
    assert len(violations) == 1
    assert "forms a cycle" in violations[0].description
    assert violations[0].field.endswith(".depends_on")


def test_find_cycle_finds_a_long_cycle_as_a_closed_path() -> None:
    n = 500
    graph = {f"n{i}": [f"n{(i + 1) % n}"] for i in range(n)}
    cycle = rules.find_cycle(graph)
    assert cycle[0] == cycle[-1]
    assert len(cycle) == n + 1
    for here, there in itertools.pairwise(cycle):
        assert there in graph[here]


def test_find_cycle_on_a_long_chain_is_empty() -> None:
    n = 300
    graph = {f"n{i}": ([f"n{i + 1}"] if i + 1 < n else []) for i in range(n)}
    assert rules.find_cycle(graph) == []


@given(
    st.lists(st.lists(st.integers(0, 7), max_size=3), min_size=1, max_size=8),
)
def test_find_cycle_agrees_with_a_topological_sort(raw: list[list[int]]) -> None:
    n = len(raw)
    graph = {f"k{i}": sorted({f"k{d % n}" for d in deps}) for i, deps in enumerate(raw)}
    # Kahn's algorithm: a cycle exists iff not every node can be removed.
    remaining = {k: set(v) for k, v in graph.items()}
    changed = True
    while changed:
        changed = False
        for node in [k for k, v in remaining.items() if not v]:
            del remaining[node]
            for deps in remaining.values():
                deps.discard(node)
            changed = True
    cycle = rules.find_cycle(graph)
    assert bool(cycle) == bool(remaining)
    if cycle:
        assert cycle[0] == cycle[-1]
        for here, there in itertools.pairwise(cycle):
            assert there in graph[here]


# --------------------------------------------------------------------------- placement


def _worker(labels: dict[str, str]) -> Worker:
    return Worker("wc_1", "w1", "codex", NOW, NOW, labels=labels)


def test_placement_problems() -> None:
    assert rules.placement_problems(None) == []
    assert rules.placement_problems({}) == []
    ok = {"require_labels": {"gpu": "a100"}, "worker_id": "w1", "exclusive": ["gpu:0"]}
    assert rules.placement_problems(ok) == []
    assert rules.placement_problems({"near": "repo"}) == ["unknown placement field 'near'"]
    assert rules.placement_problems({"require_labels": ["gpu"]}) == [
        "require_labels must be an object"
    ]
    assert rules.placement_problems({"require_labels": {"bad label!": "x"}}) == [
        "bad label name 'bad label!'"
    ]
    assert rules.placement_problems({"require_labels": {"gpu": 1}}) == ["bad value of label 'gpu'"]
    assert rules.placement_problems({"worker_id": "has space"}) == ["bad worker_id"]
    assert rules.placement_problems({"exclusive": "gpu"}) == [
        "exclusive must be a list of resource names"
    ]
    assert rules.placement_problems({"exclusive": ["", "x"]}) == [
        "exclusive must be a list of resource names"
    ]


def test_placement_matching() -> None:
    assert rules.placement_matches(None, "w1", None)
    assert rules.placement_matches({"worker_id": "w1"}, "w1", None)
    assert not rules.placement_matches({"worker_id": "w1"}, "w2", None)
    wants_gpu = {"require_labels": {"gpu": "a100"}}
    assert rules.placement_matches(wants_gpu, "w1", _worker({"gpu": "a100", "os": "linux"}))
    assert not rules.placement_matches(wants_gpu, "w1", _worker({"gpu": "h100"}))
    assert not rules.placement_matches(wants_gpu, "w1", None)  # an unregistered worker has none
    # Exclusive resources do not restrict who matches; they are held while live.
    assert rules.placement_matches({"exclusive": ["gpu:0"]}, "w9", None)
    assert rules.placement_resources({"exclusive": ["gpu:0", "disk"]}) == ["gpu:0", "disk"]
    assert rules.placement_resources(None) == []


# --------------------------------------------------------------------------- sensitive text


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("Deploy the API to production", "production deploy"),
        ("release v2 to prod tonight", "production deploy"),
        ("production rollout of the new billing-free pipeline", "production deploy"),
        ("Drop the users database", "deleting data"),
        ("truncate the events table", "deleting data"),
        ("run rm -rf /var/lib/data", "deleting data"),
        ("force-push the rebased branch", "force push"),
        ("git push -f origin main", "force push"),
        ("push the branch with --force", "force push"),
        ("Rotate the database credentials", "credential change"),
        ("reset the admin password", "credential change"),
        ("Refund the customer's last payment", "payment"),
        ("charge the card for the upgrade", "payment"),
        ("grant admin to the contractor", "permission change"),
        ("terraform destroy the staging stack", "destructive infrastructure"),
    ],
)
def test_sensitive_phrases_are_found_and_reported(text: str, label: str) -> None:
    found = rules.sensitive_phrase(text)
    assert found.startswith(label + ": ")
    # The matched phrase is quoted and is really part of the text.
    quoted = found.split(": ", 1)[1]
    assert quoted.startswith('"') and quoted.endswith('"')
    assert quoted[1:-1].lower() in text.lower()


@pytest.mark.parametrize(
    "text",
    [
        "fix flaky parser test",
        "update README",
        "refactor payload parsing",
        "add unit tests for the lease engine",
        "improve error messages of the CLI",
        "bump ruff to the latest version",
        "",
    ],
)
def test_benign_titles_do_not_match(text: str) -> None:
    assert rules.sensitive_phrase(text) == ""


def test_sensitive_phrase_looks_at_every_text() -> None:
    assert rules.sensitive_phrase("update README", "then deploy to production").startswith(
        "production deploy"
    )


def test_policy_stop_reason() -> None:
    allowed = ("repo_inspect", "repo_edit")
    assert rules.policy_stop_reason(_item(), allowed) == ("", False)
    assert rules.policy_stop_reason(_item(action_classes=["repo_edit"]), allowed) == ("", False)
    assert rules.policy_stop_reason(_item(action_classes=["shell"]), allowed) == (
        "action class not allowed: shell",
        False,
    )
    assert rules.policy_stop_reason(_item(needs_human=True), allowed) == ("needs a human", False)
    reason, sensitive = rules.policy_stop_reason(_item(title="deploy to production"), allowed)
    assert sensitive and reason.startswith("sensitive action: production deploy")
    reason, sensitive = rules.policy_stop_reason(_item(brief="then drop the database"), allowed)
    assert sensitive and "deleting data" in reason


# --------------------------------------------------------------------------- labels


@pytest.mark.parametrize(
    ("state", "label"),
    [
        (ItemState.WAITING, "wait: dependencies"),
        (ItemState.QUEUED, "lease task (codex)"),
        (ItemState.LEASED, "start task (codex)"),
        (ItemState.RUNNING, "running task (codex)"),
        (ItemState.AWAITING_APPROVAL, "approve task"),
        (ItemState.STOPPED, "human: resume or cancel"),
        (ItemState.DEAD, "human: retry or cancel"),
        (ItemState.SUCCEEDED, "done"),
        (ItemState.CANCELLED, "cancelled"),
    ],
)
def test_item_next_action(state: ItemState, label: str) -> None:
    assert rules.item_next_action(_item(state=state)) == label


def _around(
    capacity: dict[str, tuple[int, int]] | None = None, holders: dict[str, str] | None = None
) -> Surroundings:
    return Surroundings(NOW, capacity or {"codex": (0, 4)}, holders or {})


def test_item_next_action_shows_capacity_and_holds() -> None:
    queued = _item(state=ItemState.QUEUED)
    assert rules.item_next_action(queued, _around({"codex": (4, 4)})) == "wait: codex 4/4"
    assert rules.item_next_action(queued, _around({"codex": (3, 4)})) == "lease task (codex)"
    assert rules.item_next_action(_item(held=True), _around()) == "wait: lane held"
    assert rules.item_next_action(_item(held=True)) == "wait: lane held"
    assert rules.item_next_action(_item(kind=ItemKind.BUILD)) == "lease build (codex)"
    # A class the work coordinator no longer has has no capacity.
    assert rules.item_next_action(_item(worker_class="gpu"), _around()) == "wait: gpu 0/0"


def test_item_next_action_shows_a_backoff() -> None:
    """Regression: a queued item backing off read ``lease …`` though no worker could lease it."""
    backing_off = _item(not_before=NOW + timedelta(seconds=1))
    assert rules.item_next_action(backing_off, _around()) == "wait: backoff"
    # The backoff first: capacity freeing up does not make it leasable.
    assert rules.item_next_action(backing_off, _around({"codex": (4, 4)})) == "wait: backoff"
    assert rules.item_next_action(replace(backing_off, not_before=NOW), _around()) == (
        "lease task (codex)"
    )
    assert rules.item_next_action(backing_off) == "lease task (codex)"  # now not known


def test_item_next_action_shows_a_held_exclusive_key() -> None:
    """Regression: an item whose exclusive key another live lease holds read ``lease …``."""
    keyed = _item(exclusive_key="repo:a", placement={"exclusive": ["gpu0"]})
    held = _around(holders={"repo:a": "ls_1", "resource:gpu0": "ls_2", "repo:b": "ls_3"})
    assert rules.item_next_action(keyed, held) == "wait: repo:a, resource:gpu0 held"
    assert rules.item_next_action(keyed, _around(holders={"repo:b": "ls_3"})) == (
        "lease task (codex)"
    )
    # Capacity comes before keys, as in the gates table.
    assert rules.item_next_action(keyed, replace(held, capacity={"codex": (1, 1)})) == (
        "wait: codex 1/1"
    )


def _lane(**kwargs: object) -> Lane:
    base = Lane("ln_1", "wc_1", "t", Template.CUSTOM, 0, {}, LaneState.ACTIVE, False, NOW, NOW)
    return replace(base, **kwargs)  # type: ignore[arg-type]


def test_lane_next_action() -> None:
    assert rules.lane_next_action(_lane(state=LaneState.LIVE), []) == "live"
    assert rules.lane_next_action(_lane(state=LaneState.DONE), []) == "done"
    assert rules.lane_next_action(_lane(state=LaneState.CLOSED_OUT), []) == "human close-out"
    assert rules.lane_next_action(_lane(state=LaneState.CANCELLED), []) == "cancelled"
    assert rules.lane_next_action(_lane(paused=True), [_item()]) == "paused"
    assert rules.lane_next_action(_lane(), [_item()], open_blockers=1) == "blocked"
    assert rules.lane_next_action(_lane(), []) == "add items"
    assert rules.lane_next_action(_lane(), [_item(state=ItemState.SUCCEEDED)]) == "done"
    items = [
        _item(item_id="a", state=ItemState.QUEUED, seq=1),
        _item(item_id="b", state=ItemState.STOPPED, seq=2),
        _item(item_id="c", state=ItemState.AWAITING_APPROVAL, seq=3),
    ]
    # The most urgent item decides: a human approval beats a stop beats queued work.
    assert rules.lane_next_action(_lane(), items) == "approve task"
    assert rules.lane_next_action(_lane(), items[:2]) == "human: resume or cancel"
    assert rules.lane_next_action(_lane(), items[:1], around=_around({"codex": (2, 2)})) == (
        "wait: codex 2/2"
    )
    # Among equals, higher priority first.
    queued = [
        _item(item_id="x", state=ItemState.QUEUED, worker_class="codex", priority=0, seq=1),
        _item(item_id="y", state=ItemState.QUEUED, worker_class="machine", priority=5, seq=2),
    ]
    assert rules.lane_next_action(_lane(), queued) == "lease task (machine)"


def test_lease_expiry() -> None:
    assert rules.lease_expiry(NOW, 30) == NOW + timedelta(seconds=30)


# --------------------------------------------------------------------------- leasing helpers


def test_an_ask_is_written_again_only_after_a_few_seconds() -> None:
    worker = Worker("wc_1", "w1", "codex", NOW, NOW, last_ask_time=NOW)
    assert not rules.ask_is_fresh(None, NOW)
    assert not rules.ask_is_fresh(replace(worker, last_ask_time=None), NOW)
    assert rules.ask_is_fresh(worker, NOW + timedelta(seconds=rules.ASK_REFRESH_SECONDS - 1))
    assert not rules.ask_is_fresh(worker, NOW + timedelta(seconds=rules.ASK_REFRESH_SECONDS))


def test_exclusive_keys_are_the_key_and_the_placement_resources() -> None:
    assert rules.exclusive_keys(_item()) == []
    item = _item(exclusive_key="repo:x", placement={"exclusive": ["gpu0", "gpu1"]})
    assert rules.exclusive_keys(item) == ["repo:x", "resource:gpu0", "resource:gpu1"]
