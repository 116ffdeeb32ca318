"""The digest owner: required for an ORG work coordinator and an e-mail address (the field is
named when it is not); a digest whose owner is a user's address names that user."""

from __future__ import annotations

import uuid

import pytest

from workcoord.coordinator.domain.engine import Engine
from workcoord.coordinator.domain.inputs import (
    CreateCoordinatorInput,
    CreateUserInput,
    UpdateCoordinatorInput,
)
from workcoord.coordinator.domain.model import Scope
from workcoord.coordinator.domain.specs import CoordinatorSpec
from workcoord.kit.clock import ManualClock
from workcoord.kit.errors import InvalidArgument

from .harness import ADMIN, World

FIELD = "work_coordinator.digest_owner"


async def create_org_coordinator(engine: Engine, **changes: str) -> str:
    slug = f"org-{uuid.uuid4().hex[:10]}"
    await engine.membership.create_org(ADMIN, slug, "Owners")
    spec = CoordinatorSpec(scope=Scope.ORG, org_slug=slug, changes=dict(changes))
    made = await engine.coordinators.create_coordinator(ADMIN, CreateCoordinatorInput(spec=spec))
    return made.coordinator_id


def violation(error: pytest.ExceptionInfo[InvalidArgument]) -> tuple[str, str]:
    [found] = error.value.field_violations
    return found.field, found.description


async def test_an_org_work_coordinator_needs_a_digest_owner(engine: Engine) -> None:
    with pytest.raises(InvalidArgument) as error:
        await create_org_coordinator(engine)
    assert violation(error) == (FIELD, "is required for an ORG work coordinator")


@pytest.mark.parametrize(
    "owner", ["ops", "ops@", "@acme.test", "ops@acme", "two words@acme.test", "a@b@acme.test"]
)
async def test_the_digest_owner_is_an_email_address(engine: Engine, owner: str) -> None:
    with pytest.raises(InvalidArgument) as error:
        await create_org_coordinator(engine, digest_owner=owner)
    field_name, description = violation(error)
    assert field_name == FIELD and description.startswith("must be an e-mail address")


async def test_an_update_cannot_clear_or_spoil_the_owner(engine: Engine, world: World) -> None:
    cid = world.coordinator.coordinator_id
    for owner in ("", "not-an-address"):
        spec = CoordinatorSpec(scope=None, changes={"digest_owner": owner})
        with pytest.raises(InvalidArgument) as error:
            await engine.coordinators.update_coordinator(
                ADMIN, UpdateCoordinatorInput(coordinator_id=cid, spec=spec)
            )
        assert violation(error)[0] == FIELD
    spec = CoordinatorSpec(scope=None, changes={"digest_owner": "lead@acme.test"})
    updated = await engine.coordinators.update_coordinator(
        ADMIN, UpdateCoordinatorInput(coordinator_id=cid, spec=spec)
    )
    assert updated.config.digest_owner == "lead@acme.test"


async def test_a_global_work_coordinator_may_have_no_owner(engine: Engine) -> None:
    spec = CoordinatorSpec(scope=Scope.GLOBAL, display_name="Platform")
    made = await engine.coordinators.create_coordinator(ADMIN, CreateCoordinatorInput(spec=spec))
    assert made.config.digest_owner == ""


async def test_the_digest_names_the_user_whose_address_the_owner_is(
    engine: Engine, clock: ManualClock
) -> None:
    address = f"Lead-{uuid.uuid4().hex[:6]}@Acme.test"
    unknown = await create_org_coordinator(engine, digest_owner="nobody@acme.test")
    known = await create_org_coordinator(engine, digest_owner=address)
    await engine.membership.create_user(
        ADMIN, CreateUserInput(email=address, display_name="Lead Engineer")
    )
    day = clock.now().strftime("%Y-%m-%d")
    digest = await engine.follow_ups.get_digest(ADMIN, known, day)
    assert (digest.owner, digest.owner_display_name) == (address, "Lead Engineer")
    digest = await engine.follow_ups.get_digest(ADMIN, unknown, day)
    assert (digest.owner, digest.owner_display_name) == ("nobody@acme.test", "")
