"""What attempts spent, as the roll-ups show it (``engine.usage``)."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, timedelta

from workcoord.kit.errors import InvalidArgument

from .. import usage
from ..auth import Principal
from ..budgets import spent
from ..inputs import GetUsageInput
from ..model import UsageScope, UsageTotal
from ..results import BudgetReport, UsageReport
from . import budgeting
from ._base import EngineService

#: How many days ``group_by = DAY`` answers (up to and including the day asked).
DAYS_SHOWN = 14

_GROUPS = {
    "LANE": UsageScope.LANE,
    "WORKER_CLASS": UsageScope.WORKER_CLASS,
    "MODEL": UsageScope.MODEL,
}


def _day(value: str) -> str:
    """``value`` if it is a UTC day (``YYYY-MM-DD``) or ""; else INVALID_ARGUMENT."""
    if not value:
        return ""
    try:
        return date.fromisoformat(value).isoformat()
    except ValueError:
        raise InvalidArgument.single("day", "must be a UTC day, YYYY-MM-DD") from None


class UsageService(EngineService):
    """Reads of the usage roll-ups: each is a look-up by key, never a scan of attempts."""

    async def get_usage(self, principal: Principal, input: GetUsageInput) -> UsageReport:
        """The total of ``day`` (or all time), of the lane if ``lane_id``, with its groups."""
        coordinator_id, lane_id, group_by = input.coordinator_id, input.lane_id, input.group_by
        day = _day(input.day)
        if group_by not in ("", "DAY", *_GROUPS):
            raise InvalidArgument.single("group_by", "must be LANE, WORKER_CLASS, MODEL or DAY")
        if lane_id and group_by in ("WORKER_CLASS", "MODEL"):
            raise InvalidArgument.single(
                "group_by",
                "with a lane_id, group by LANE or DAY (classes and models roll up "
                "per work coordinator)",
            )
        scope, key = (UsageScope.LANE, lane_id) if lane_id else (UsageScope.COORDINATOR, "")
        async with self.core.store.read() as reader:
            await self.core.coordinator_for(reader, principal, coordinator_id)
            if lane_id:
                await self.core.lane_in(reader, coordinator_id, lane_id)
            found = await reader.usage_totals(coordinator_id, scope, day, [key])
            total = found[0] if found else UsageTotal(coordinator_id, scope, key, day)
            groups: list[UsageTotal] = []
            if group_by == "DAY":
                last = date.fromisoformat(day or usage.day_of(self.core.clock.now()))
                since = (last - timedelta(days=DAYS_SHOWN - 1)).isoformat()
                # Keyed by their day.
                groups = [
                    replace(g, key=g.day)
                    for g in await reader.usage_days(coordinator_id, scope, key, since)
                    if g.day <= last.isoformat()
                ]
            elif group_by == "LANE" and lane_id:
                groups = found
            elif group_by:
                groups = await reader.usage_totals(coordinator_id, _GROUPS[group_by], day)
        return UsageReport(day, total, groups)

    async def get_budget(
        self, principal: Principal, input: GetUsageInput
    ) -> tuple[BudgetReport, BudgetReport | None]:
        """The work coordinator's day budget (today, UTC) and, with ``lane_id``, the lane's
        lifetime budget: limits, used, and the limit reached if spent."""
        coordinator_id, lane_id = input.coordinator_id, input.lane_id
        now = self.core.clock.now()
        async with self.core.store.read() as reader:
            coordinator = await self.core.coordinator_for(reader, principal, coordinator_id)
            scope, day_used = await budgeting.budget_used(reader, coordinator_id, "", now)
            day = BudgetReport(
                scope,
                "",
                usage.day_of(now),
                coordinator.budget,
                day_used,
                spent(scope, coordinator.budget, day_used),
            )
            if not lane_id:
                return day, None
            lane = await self.core.lane_in(reader, coordinator_id, lane_id)
            scope, used = await budgeting.budget_used(reader, coordinator_id, lane_id, now)
            report = BudgetReport(
                scope, lane_id, "", lane.budget, used, spent(scope, lane.budget, used)
            )
            return day, report
