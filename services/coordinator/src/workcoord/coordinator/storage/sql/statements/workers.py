"""The worker pool of each work coordinator."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Integer, bindparam, delete, func, null, select, update

from ... import schema as t
from ._dialects import upsert
from .attempts import LIVE

_W = t.workers
_KEY = ["coordinator_id", "worker_id"]
_MINE = _W.c.coordinator_id == bindparam("coordinator_id")
_THE_ONE = (_MINE, _W.c.worker_id == bindparam("worker_id"))
# An UPDATE's parameters named after columns would be written too: its keys are b_<column>.
_THE_ONE_TO_UPDATE = (
    _W.c.coordinator_id == bindparam("b_coordinator_id"),
    _W.c.worker_id == bindparam("b_worker_id"),
)

#: The worker ``:worker_id`` of ``:coordinator_id``.
GET_WORKER = select(_W).where(*_THE_ONE)

#: A page of the pool by worker id, after ``:after_id``, at most ``:limit``.
LIST_WORKERS = (
    select(_W)
    .where(_MINE, _W.c.worker_id > bindparam("after_id"))
    .order_by(_W.c.worker_id)
    .limit(bindparam("limit", type_=Integer))
)

#: How many workers the pool has.
COUNT_WORKERS = select(func.count()).select_from(_W).where(_MINE)

_REFRESHED = [c.name for c in _W.c if c.name not in (*_KEY, "create_time")]


def _upsert_worker(insert: Any) -> Any:
    stmt = insert(_W)
    refreshed = {name: stmt.excluded[name] for name in _REFRESHED}
    return stmt.on_conflict_do_update(index_elements=_KEY, set_=refreshed)


def _touch_worker_ask(insert: Any) -> Any:
    stmt = insert(_W)
    touched = {name: stmt.excluded[name] for name in ("last_ask_time", "observe_time")}
    return stmt.on_conflict_do_update(index_elements=_KEY, set_=touched)


#: Register the worker, or refresh every column of a known one but its create time.
UPSERT_WORKER = upsert(_upsert_worker)

#: Note a lease request: register the worker bare, or move a known one's ask and observe
#: times.
TOUCH_WORKER_ASK = upsert(_touch_worker_ask)

#: Set the worker's fence to ``:fence``.
SET_FENCE = update(_W).where(*_THE_ONE_TO_UPDATE).values(fence=bindparam("fence"))

#: Lift the worker's fence (SQL NULL, not JSON null).
LIFT_FENCE = update(_W).where(*_THE_ONE_TO_UPDATE).values(fence=null())

#: Forget the worker.
DELETE_WORKER = delete(_W).where(*_THE_ONE)

_BUSY = select(t.attempts.c.worker_id).where(
    t.attempts.c.coordinator_id == bindparam("coordinator_id"), t.attempts.c.status.in_(LIVE)
)

#: The workers unseen since ``:unseen_before`` that hold no live attempt, by id.
EVICTABLE_WORKERS = (
    select(_W.c.worker_id)
    .where(_MINE, _W.c.observe_time < bindparam("unseen_before"), _W.c.worker_id.not_in(_BUSY))
    .order_by(_W.c.worker_id)
)

#: Forget the workers ``:worker_ids``.
DELETE_WORKERS = delete(_W).where(
    _MINE, _W.c.worker_id.in_(bindparam("worker_ids", expanding=True))
)
