"""The one rule of who may weaken a policy (``domain/policies.py``), as a pure function: what
counts as weaker than the work coordinator's policy, field by field, and who may set it."""

from __future__ import annotations

import pytest

from workcoord.coordinator.domain import policies
from workcoord.coordinator.domain.auth import Capability, OrgRole, Principal, PrincipalKind
from workcoord.coordinator.domain.model import (
    Coordinator,
    CoordinatorConfig,
    OnPass,
    RetryPolicy,
    ReviewPolicy,
    Scope,
    Template,
)
from workcoord.coordinator.domain.specs import ItemSpec, LaneSpec
from workcoord.kit.errors import PermissionDenied

DEFAULTS = CoordinatorConfig()


def _review(requested: ReviewPolicy, coordinator: ReviewPolicy | None = None) -> list[str]:
    return policies.weaker_review(requested, coordinator or ReviewPolicy())


def _retry(requested: RetryPolicy, coordinator: RetryPolicy | None = None) -> list[str]:
    return policies.weaker_retry(requested, coordinator or RetryPolicy())


def test_unset_fields_inherit_and_weaken_nothing() -> None:
    assert _review(ReviewPolicy()) == []
    assert _retry(RetryPolicy()) == []
    assert policies.lane_weakened_fields(LaneSpec("l", Template.STANDARD), DEFAULTS) == []


def test_removing_the_ship_approval_is_weaker_adding_it_is_not() -> None:
    assert _review(ReviewPolicy(ship_requires_approval=False)) == [
        "review_policy.ship_requires_approval"
    ]
    assert _review(ReviewPolicy(ship_requires_approval=True)) == []
    # A coordinator that ships without approval lets a key choose either.
    no_approval = ReviewPolicy(ship_requires_approval=False)
    assert _review(ReviewPolicy(ship_requires_approval=False), no_approval) == []
    assert _review(ReviewPolicy(ship_requires_approval=True), no_approval) == []


@pytest.mark.parametrize(
    ("coordinator", "requested", "weaker"),
    [
        (OnPass.SHIP, OnPass.SHIP, False),
        (OnPass.SHIP, OnPass.INTEGRATE_THEN_SHIP, False),
        (OnPass.SHIP, OnPass.NONE, False),
        (OnPass.INTEGRATE_THEN_SHIP, OnPass.SHIP, True),
        (OnPass.INTEGRATE_THEN_SHIP, OnPass.NONE, False),
        (OnPass.NONE, OnPass.SHIP, True),
        (OnPass.NONE, OnPass.INTEGRATE_THEN_SHIP, True),
        (OnPass.NONE, OnPass.NONE, False),
    ],
)
def test_shipping_more_on_pass_is_weaker(
    coordinator: OnPass, requested: OnPass, weaker: bool
) -> None:
    found = _review(ReviewPolicy(on_pass=requested), ReviewPolicy(on_pass=coordinator))
    assert found == (["review_policy.on_pass"] if weaker else [])


def test_more_fail_rounds_or_attempts_are_weaker_fewer_are_not() -> None:
    assert _review(ReviewPolicy(max_fail_rounds=3)) == ["review_policy.max_fail_rounds"]
    assert _review(ReviewPolicy(max_fail_rounds=2)) == []
    assert _review(ReviewPolicy(max_fail_rounds=1)) == []
    assert _review(ReviewPolicy(max_fail_rounds=4), ReviewPolicy(max_fail_rounds=5)) == []
    assert _retry(RetryPolicy(maximum_attempts=5)) == ["retry_policy.maximum_attempts"]
    assert _retry(RetryPolicy(maximum_attempts=4)) == []
    assert _retry(RetryPolicy(maximum_attempts=1)) == []
    assert _retry(RetryPolicy(maximum_attempts=9), RetryPolicy(maximum_attempts=10)) == []


@pytest.mark.parametrize(
    ("requested", "weaker"),
    [
        (RetryPolicy(initial_interval=1.0), ["retry_policy.initial_interval"]),
        (RetryPolicy(backoff_coefficient=1.0), ["retry_policy.backoff_coefficient"]),
        (RetryPolicy(maximum_interval=10.0), ["retry_policy.maximum_interval"]),
        (RetryPolicy(initial_interval=0.0), ["retry_policy.initial_interval"]),
        (
            RetryPolicy(initial_interval=1.0, backoff_coefficient=1.5, maximum_attempts=10),
            [
                "retry_policy.maximum_attempts",
                "retry_policy.initial_interval",
                "retry_policy.backoff_coefficient",
            ],
        ),
        # Slower in every field: stricter.
        (RetryPolicy(initial_interval=60.0, backoff_coefficient=4.0, maximum_interval=900.0), []),
        # A smaller coefficient from a much longer first delay never retries sooner.
        (RetryPolicy(initial_interval=100.0, backoff_coefficient=2.0), []),
        # The same schedule spelt out is not weaker.
        (RetryPolicy(initial_interval=5.0, backoff_coefficient=3.0, maximum_interval=300.0), []),
    ],
)
def test_a_retry_schedule_is_weaker_if_it_ever_retries_sooner(
    requested: RetryPolicy, weaker: list[str]
) -> None:
    assert _retry(requested) == weaker


def test_the_coordinators_own_policy_is_the_floor_not_the_defaults() -> None:
    config = CoordinatorConfig(
        retry_policy=RetryPolicy(maximum_attempts=2, initial_interval=30.0),
        review_policy=ReviewPolicy(max_fail_rounds=1, on_pass=OnPass.NONE),
    )
    spec = LaneSpec(
        "l",
        Template.STANDARD,
        retry_policy=RetryPolicy(maximum_attempts=3, initial_interval=10.0),
        review_policy=ReviewPolicy(max_fail_rounds=2, on_pass=OnPass.SHIP),
    )
    assert policies.lane_weakened_fields(spec, config) == [
        "lane.review_policy.max_fail_rounds",
        "lane.review_policy.on_pass",
        "lane.retry_policy.maximum_attempts",
        "lane.retry_policy.initial_interval",
    ]
    # What the defaults would allow is still weaker than this coordinator.
    assert policies.lane_weakened_fields(spec, DEFAULTS) == []


def test_items_are_checked_under_their_path() -> None:
    weak = ItemSpec(key="a", retry_policy=RetryPolicy(maximum_attempts=10))
    fine = ItemSpec(key="b", retry_policy=RetryPolicy(maximum_attempts=2))
    spec = LaneSpec("l", Template.CUSTOM, items=[fine, weak])
    assert policies.lane_weakened_fields(spec, DEFAULTS) == [
        "lane.items[1].retry_policy.maximum_attempts"
    ]
    assert policies.item_weakened_fields(weak, DEFAULTS, "item") == [
        "item.retry_policy.maximum_attempts"
    ]
    # Fields that only add a human step are never weaker.
    stricter = ItemSpec(key="c", requires_approval=True, needs_human=True, action_classes=["x"])
    assert policies.item_weakened_fields(stricter, DEFAULTS, "item") == []


# ---------------------------------------------------------------- who may weaken

ORG = "acme"
COORDINATOR = Coordinator(
    coordinator_id="wc_1",
    scope=Scope.ORG,
    org_slug=ORG,
    display_name="",
    enabled=True,
    revision=0,
    config=DEFAULTS,
    config_version=1,
    create_time=None,  # type: ignore[arg-type]  # not read by the rule
    update_time=None,  # type: ignore[arg-type]
)
KEY = Principal(
    kind=PrincipalKind.WORK_KEY,
    id="wk_1",
    org_slug=ORG,
    capabilities=frozenset(Capability),
    coordinator_ids=frozenset({"wc_1"}),
)
ORG_ADMIN = Principal(kind=PrincipalKind.USER, id="u1", org_roles={ORG: OrgRole.ORG_ADMIN})
VIEWER = Principal(kind=PrincipalKind.USER, id="u2", org_roles={ORG: OrgRole.ORG_VIEWER})
PLATFORM_ADMIN = Principal(kind=PrincipalKind.USER, id="u3", platform_admin=True)
OTHER_ADMIN = Principal(kind=PrincipalKind.USER, id="u4", org_roles={"other": OrgRole.ORG_ADMIN})


def test_only_a_human_administrator_may_weaken() -> None:
    assert policies.may_weaken(ORG_ADMIN, COORDINATOR)
    assert policies.may_weaken(PLATFORM_ADMIN, COORDINATOR)
    assert not policies.may_weaken(KEY, COORDINATOR)  # whatever its capabilities
    assert not policies.may_weaken(VIEWER, COORDINATOR)
    assert not policies.may_weaken(OTHER_ADMIN, COORDINATOR)


def test_a_refusal_names_every_weakened_field() -> None:
    fields = ["lane.review_policy.ship_requires_approval", "lane.retry_policy.maximum_attempts"]
    with pytest.raises(PermissionDenied) as refused:
        policies.require_may_weaken(KEY, COORDINATOR, fields)
    assert refused.value.metadata == {"field": fields[0], "fields": ",".join(fields)}
    assert all(name in refused.value.message for name in fields)
    policies.require_may_weaken(KEY, COORDINATOR, [])  # nothing weakened: nothing to refuse
    policies.require_may_weaken(ORG_ADMIN, COORDINATOR, fields)
