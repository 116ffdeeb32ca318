import datetime

from google.api import annotations_pb2 as _annotations_pb2
from google.api import field_behavior_pb2 as _field_behavior_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import field_mask_pb2 as _field_mask_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from workcoord.api.v1 import event_pb2 as _event_pb2
from workcoord.api.v1 import field_rules_pb2 as _field_rules_pb2
from workcoord.api.v1 import lane_pb2 as _lane_pb2
from workcoord.api.v1 import policy_pb2 as _policy_pb2
from workcoord.api.v1 import tracker_pb2 as _tracker_pb2
from workcoord.api.v1 import worker_pb2 as _worker_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class WorkCoordinator(_message.Message):
    __slots__ = ("coordinator_id", "scope", "org_slug", "display_name", "enabled", "revision", "class_capacity", "retry_policy", "review_policy", "action_policy", "digest_owner", "escalate_after", "parent_coordinator_id", "create_time", "update_time", "etag", "max_run_duration", "budget")
    class Scope(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        SCOPE_UNSPECIFIED: _ClassVar[WorkCoordinator.Scope]
        GLOBAL: _ClassVar[WorkCoordinator.Scope]
        ORG: _ClassVar[WorkCoordinator.Scope]
    SCOPE_UNSPECIFIED: WorkCoordinator.Scope
    GLOBAL: WorkCoordinator.Scope
    ORG: WorkCoordinator.Scope
    class ClassCapacityEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class MaxRunDurationEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _duration_pb2.Duration
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    ORG_SLUG_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    CLASS_CAPACITY_FIELD_NUMBER: _ClassVar[int]
    RETRY_POLICY_FIELD_NUMBER: _ClassVar[int]
    REVIEW_POLICY_FIELD_NUMBER: _ClassVar[int]
    ACTION_POLICY_FIELD_NUMBER: _ClassVar[int]
    DIGEST_OWNER_FIELD_NUMBER: _ClassVar[int]
    ESCALATE_AFTER_FIELD_NUMBER: _ClassVar[int]
    PARENT_COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    ETAG_FIELD_NUMBER: _ClassVar[int]
    MAX_RUN_DURATION_FIELD_NUMBER: _ClassVar[int]
    BUDGET_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    scope: WorkCoordinator.Scope
    org_slug: str
    display_name: str
    enabled: bool
    revision: int
    class_capacity: _containers.ScalarMap[str, int]
    retry_policy: _policy_pb2.RetryPolicy
    review_policy: _policy_pb2.ReviewPolicy
    action_policy: _policy_pb2.ActionPolicy
    digest_owner: str
    escalate_after: _duration_pb2.Duration
    parent_coordinator_id: str
    create_time: _timestamp_pb2.Timestamp
    update_time: _timestamp_pb2.Timestamp
    etag: str
    max_run_duration: _containers.MessageMap[str, _duration_pb2.Duration]
    budget: _lane_pb2.DayBudget
    def __init__(self, coordinator_id: _Optional[str] = ..., scope: _Optional[_Union[WorkCoordinator.Scope, str]] = ..., org_slug: _Optional[str] = ..., display_name: _Optional[str] = ..., enabled: _Optional[bool] = ..., revision: _Optional[int] = ..., class_capacity: _Optional[_Mapping[str, int]] = ..., retry_policy: _Optional[_Union[_policy_pb2.RetryPolicy, _Mapping]] = ..., review_policy: _Optional[_Union[_policy_pb2.ReviewPolicy, _Mapping]] = ..., action_policy: _Optional[_Union[_policy_pb2.ActionPolicy, _Mapping]] = ..., digest_owner: _Optional[str] = ..., escalate_after: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., parent_coordinator_id: _Optional[str] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., etag: _Optional[str] = ..., max_run_duration: _Optional[_Mapping[str, _duration_pb2.Duration]] = ..., budget: _Optional[_Union[_lane_pb2.DayBudget, _Mapping]] = ...) -> None: ...

class ClassUsage(_message.Message):
    __slots__ = ("worker_class", "in_use", "capacity", "lease_ids", "queued")
    WORKER_CLASS_FIELD_NUMBER: _ClassVar[int]
    IN_USE_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    LEASE_IDS_FIELD_NUMBER: _ClassVar[int]
    QUEUED_FIELD_NUMBER: _ClassVar[int]
    worker_class: str
    in_use: int
    capacity: int
    lease_ids: _containers.RepeatedScalarFieldContainer[str]
    queued: int
    def __init__(self, worker_class: _Optional[str] = ..., in_use: _Optional[int] = ..., capacity: _Optional[int] = ..., lease_ids: _Optional[_Iterable[str]] = ..., queued: _Optional[int] = ...) -> None: ...

class PendingAction(_message.Message):
    __slots__ = ("action_id", "lane_id", "kind", "state", "owner", "attempts", "next_attempt_time", "last_error", "ticket", "resolution", "create_time", "update_time")
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        KIND_UNSPECIFIED: _ClassVar[PendingAction.Kind]
        CLOSE_TICKET: _ClassVar[PendingAction.Kind]
        REDELIVER_WEBHOOK: _ClassVar[PendingAction.Kind]
        RAISE_BUDGET: _ClassVar[PendingAction.Kind]
    KIND_UNSPECIFIED: PendingAction.Kind
    CLOSE_TICKET: PendingAction.Kind
    REDELIVER_WEBHOOK: PendingAction.Kind
    RAISE_BUDGET: PendingAction.Kind
    class State(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        STATE_UNSPECIFIED: _ClassVar[PendingAction.State]
        OPEN: _ClassVar[PendingAction.State]
        SUCCEEDED: _ClassVar[PendingAction.State]
        RESOLVED: _ClassVar[PendingAction.State]
    STATE_UNSPECIFIED: PendingAction.State
    OPEN: PendingAction.State
    SUCCEEDED: PendingAction.State
    RESOLVED: PendingAction.State
    ACTION_ID_FIELD_NUMBER: _ClassVar[int]
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_ATTEMPT_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    TICKET_FIELD_NUMBER: _ClassVar[int]
    RESOLUTION_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    action_id: str
    lane_id: str
    kind: PendingAction.Kind
    state: PendingAction.State
    owner: str
    attempts: int
    next_attempt_time: _timestamp_pb2.Timestamp
    last_error: str
    ticket: _lane_pb2.Ticket
    resolution: str
    create_time: _timestamp_pb2.Timestamp
    update_time: _timestamp_pb2.Timestamp
    def __init__(self, action_id: _Optional[str] = ..., lane_id: _Optional[str] = ..., kind: _Optional[_Union[PendingAction.Kind, str]] = ..., state: _Optional[_Union[PendingAction.State, str]] = ..., owner: _Optional[str] = ..., attempts: _Optional[int] = ..., next_attempt_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_error: _Optional[str] = ..., ticket: _Optional[_Union[_lane_pb2.Ticket, _Mapping]] = ..., resolution: _Optional[str] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Escalation(_message.Message):
    __slots__ = ("escalation_id", "lane_id", "item_id", "reason", "escalated_to", "open", "create_time", "resolve_time")
    ESCALATION_ID_FIELD_NUMBER: _ClassVar[int]
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    ESCALATED_TO_FIELD_NUMBER: _ClassVar[int]
    OPEN_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    RESOLVE_TIME_FIELD_NUMBER: _ClassVar[int]
    escalation_id: str
    lane_id: str
    item_id: str
    reason: str
    escalated_to: _containers.RepeatedScalarFieldContainer[str]
    open: bool
    create_time: _timestamp_pb2.Timestamp
    resolve_time: _timestamp_pb2.Timestamp
    def __init__(self, escalation_id: _Optional[str] = ..., lane_id: _Optional[str] = ..., item_id: _Optional[str] = ..., reason: _Optional[str] = ..., escalated_to: _Optional[_Iterable[str]] = ..., open: _Optional[bool] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., resolve_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Gate(_message.Message):
    __slots__ = ("gate", "detail", "since", "lease_ids", "counts_toward_escalation")
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        KIND_UNSPECIFIED: _ClassVar[Gate.Kind]
        DISABLED: _ClassVar[Gate.Kind]
        PAUSED: _ClassVar[Gate.Kind]
        BLOCKED: _ClassVar[Gate.Kind]
        DEPENDENCIES: _ClassVar[Gate.Kind]
        APPROVAL: _ClassVar[Gate.Kind]
        BACKOFF: _ClassVar[Gate.Kind]
        CAPACITY: _ClassVar[Gate.Kind]
        EXCLUSIVE: _ClassVar[Gate.Kind]
        PLACEMENT: _ClassVar[Gate.Kind]
        NOBODY_ASKING: _ClassVar[Gate.Kind]
        STOPPED: _ClassVar[Gate.Kind]
        FENCED: _ClassVar[Gate.Kind]
        POLICY: _ClassVar[Gate.Kind]
        BUDGET: _ClassVar[Gate.Kind]
    KIND_UNSPECIFIED: Gate.Kind
    DISABLED: Gate.Kind
    PAUSED: Gate.Kind
    BLOCKED: Gate.Kind
    DEPENDENCIES: Gate.Kind
    APPROVAL: Gate.Kind
    BACKOFF: Gate.Kind
    CAPACITY: Gate.Kind
    EXCLUSIVE: Gate.Kind
    PLACEMENT: Gate.Kind
    NOBODY_ASKING: Gate.Kind
    STOPPED: Gate.Kind
    FENCED: Gate.Kind
    POLICY: Gate.Kind
    BUDGET: Gate.Kind
    GATE_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    LEASE_IDS_FIELD_NUMBER: _ClassVar[int]
    COUNTS_TOWARD_ESCALATION_FIELD_NUMBER: _ClassVar[int]
    gate: Gate.Kind
    detail: str
    since: _timestamp_pb2.Timestamp
    lease_ids: _containers.RepeatedScalarFieldContainer[str]
    counts_toward_escalation: bool
    def __init__(self, gate: _Optional[_Union[Gate.Kind, str]] = ..., detail: _Optional[str] = ..., since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., lease_ids: _Optional[_Iterable[str]] = ..., counts_toward_escalation: _Optional[bool] = ...) -> None: ...

class Explanation(_message.Message):
    __slots__ = ("lane_id", "item_id", "state", "next_action", "gates", "attempts", "events", "items", "stuck_closures", "usage", "day_usage", "deadline")
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    NEXT_ACTION_FIELD_NUMBER: _ClassVar[int]
    GATES_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    STUCK_CLOSURES_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    DAY_USAGE_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    lane_id: str
    item_id: str
    state: str
    next_action: str
    gates: _containers.RepeatedCompositeFieldContainer[Gate]
    attempts: _containers.RepeatedCompositeFieldContainer[_lane_pb2.Attempt]
    events: _containers.RepeatedCompositeFieldContainer[_event_pb2.Event]
    items: _containers.RepeatedCompositeFieldContainer[Explanation]
    stuck_closures: _containers.RepeatedCompositeFieldContainer[StuckClosure]
    usage: _lane_pb2.UsageTotal
    day_usage: _lane_pb2.UsageTotal
    deadline: AttemptDeadline
    def __init__(self, lane_id: _Optional[str] = ..., item_id: _Optional[str] = ..., state: _Optional[str] = ..., next_action: _Optional[str] = ..., gates: _Optional[_Iterable[_Union[Gate, _Mapping]]] = ..., attempts: _Optional[_Iterable[_Union[_lane_pb2.Attempt, _Mapping]]] = ..., events: _Optional[_Iterable[_Union[_event_pb2.Event, _Mapping]]] = ..., items: _Optional[_Iterable[_Union[Explanation, _Mapping]]] = ..., stuck_closures: _Optional[_Iterable[_Union[StuckClosure, _Mapping]]] = ..., usage: _Optional[_Union[_lane_pb2.UsageTotal, _Mapping]] = ..., day_usage: _Optional[_Union[_lane_pb2.UsageTotal, _Mapping]] = ..., deadline: _Optional[_Union[AttemptDeadline, _Mapping]] = ...) -> None: ...

class AttemptDeadline(_message.Message):
    __slots__ = ("lease_id", "create_time", "start_time", "deadline_time", "remaining")
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_TIME_FIELD_NUMBER: _ClassVar[int]
    REMAINING_FIELD_NUMBER: _ClassVar[int]
    lease_id: str
    create_time: _timestamp_pb2.Timestamp
    start_time: _timestamp_pb2.Timestamp
    deadline_time: _timestamp_pb2.Timestamp
    remaining: _duration_pb2.Duration
    def __init__(self, lease_id: _Optional[str] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., deadline_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., remaining: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class StuckClosure(_message.Message):
    __slots__ = ("pending_action", "tracker_connection")
    PENDING_ACTION_FIELD_NUMBER: _ClassVar[int]
    TRACKER_CONNECTION_FIELD_NUMBER: _ClassVar[int]
    pending_action: PendingAction
    tracker_connection: _tracker_pb2.TrackerConnection
    def __init__(self, pending_action: _Optional[_Union[PendingAction, _Mapping]] = ..., tracker_connection: _Optional[_Union[_tracker_pb2.TrackerConnection, _Mapping]] = ...) -> None: ...

class View(_message.Message):
    __slots__ = ("work_coordinator", "revision", "lanes", "workers", "capacity", "pending_actions", "escalations", "next_page_token", "day_usage", "lane_usage")
    WORK_COORDINATOR_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    LANES_FIELD_NUMBER: _ClassVar[int]
    WORKERS_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    PENDING_ACTIONS_FIELD_NUMBER: _ClassVar[int]
    ESCALATIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    DAY_USAGE_FIELD_NUMBER: _ClassVar[int]
    LANE_USAGE_FIELD_NUMBER: _ClassVar[int]
    work_coordinator: WorkCoordinator
    revision: int
    lanes: _containers.RepeatedCompositeFieldContainer[_lane_pb2.Lane]
    workers: _containers.RepeatedCompositeFieldContainer[_worker_pb2.Worker]
    capacity: _containers.RepeatedCompositeFieldContainer[ClassUsage]
    pending_actions: _containers.RepeatedCompositeFieldContainer[PendingAction]
    escalations: _containers.RepeatedCompositeFieldContainer[Escalation]
    next_page_token: str
    day_usage: _lane_pb2.UsageTotal
    lane_usage: _containers.RepeatedCompositeFieldContainer[_lane_pb2.UsageTotal]
    def __init__(self, work_coordinator: _Optional[_Union[WorkCoordinator, _Mapping]] = ..., revision: _Optional[int] = ..., lanes: _Optional[_Iterable[_Union[_lane_pb2.Lane, _Mapping]]] = ..., workers: _Optional[_Iterable[_Union[_worker_pb2.Worker, _Mapping]]] = ..., capacity: _Optional[_Iterable[_Union[ClassUsage, _Mapping]]] = ..., pending_actions: _Optional[_Iterable[_Union[PendingAction, _Mapping]]] = ..., escalations: _Optional[_Iterable[_Union[Escalation, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., day_usage: _Optional[_Union[_lane_pb2.UsageTotal, _Mapping]] = ..., lane_usage: _Optional[_Iterable[_Union[_lane_pb2.UsageTotal, _Mapping]]] = ...) -> None: ...

class DigestEntry(_message.Message):
    __slots__ = ("kind", "lane_id", "item_id", "action_id", "reason", "time")
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        KIND_UNSPECIFIED: _ClassVar[DigestEntry.Kind]
        DEAD_LETTERED: _ClassVar[DigestEntry.Kind]
        CLOSED_OUT: _ClassVar[DigestEntry.Kind]
        CLOSE_OUT_ACTION_FAILED: _ClassVar[DigestEntry.Kind]
        PENDING_ACTION: _ClassVar[DigestEntry.Kind]
        STOPPED: _ClassVar[DigestEntry.Kind]
        ESCALATED: _ClassVar[DigestEntry.Kind]
        MAINTENANCE_STEP_FAILED: _ClassVar[DigestEntry.Kind]
        WEBHOOK_DISABLED: _ClassVar[DigestEntry.Kind]
    KIND_UNSPECIFIED: DigestEntry.Kind
    DEAD_LETTERED: DigestEntry.Kind
    CLOSED_OUT: DigestEntry.Kind
    CLOSE_OUT_ACTION_FAILED: DigestEntry.Kind
    PENDING_ACTION: DigestEntry.Kind
    STOPPED: DigestEntry.Kind
    ESCALATED: DigestEntry.Kind
    MAINTENANCE_STEP_FAILED: DigestEntry.Kind
    WEBHOOK_DISABLED: DigestEntry.Kind
    KIND_FIELD_NUMBER: _ClassVar[int]
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    ACTION_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    kind: DigestEntry.Kind
    lane_id: str
    item_id: str
    action_id: str
    reason: str
    time: _timestamp_pb2.Timestamp
    def __init__(self, kind: _Optional[_Union[DigestEntry.Kind, str]] = ..., lane_id: _Optional[str] = ..., item_id: _Optional[str] = ..., action_id: _Optional[str] = ..., reason: _Optional[str] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Digest(_message.Message):
    __slots__ = ("coordinator_id", "day", "owner", "entries", "update_time", "owner_display_name", "usage", "top_lanes")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    DAY_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    OWNER_DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    TOP_LANES_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    day: str
    owner: str
    entries: _containers.RepeatedCompositeFieldContainer[DigestEntry]
    update_time: _timestamp_pb2.Timestamp
    owner_display_name: str
    usage: _lane_pb2.UsageTotal
    top_lanes: _containers.RepeatedCompositeFieldContainer[_lane_pb2.UsageTotal]
    def __init__(self, coordinator_id: _Optional[str] = ..., day: _Optional[str] = ..., owner: _Optional[str] = ..., entries: _Optional[_Iterable[_Union[DigestEntry, _Mapping]]] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., owner_display_name: _Optional[str] = ..., usage: _Optional[_Union[_lane_pb2.UsageTotal, _Mapping]] = ..., top_lanes: _Optional[_Iterable[_Union[_lane_pb2.UsageTotal, _Mapping]]] = ...) -> None: ...

class Grant(_message.Message):
    __slots__ = ("grant_id", "coordinator_id", "parent_coordinator_id", "permissions", "expire_time", "revoke_time", "create_time", "created_by", "live")
    class Permission(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        PERMISSION_UNSPECIFIED: _ClassVar[Grant.Permission]
        SUMMARY: _ClassVar[Grant.Permission]
        ESCALATIONS: _ClassVar[Grant.Permission]
        ASSIGN: _ClassVar[Grant.Permission]
        STEER: _ClassVar[Grant.Permission]
        ESCALATE: _ClassVar[Grant.Permission]
    PERMISSION_UNSPECIFIED: Grant.Permission
    SUMMARY: Grant.Permission
    ESCALATIONS: Grant.Permission
    ASSIGN: Grant.Permission
    STEER: Grant.Permission
    ESCALATE: Grant.Permission
    GRANT_ID_FIELD_NUMBER: _ClassVar[int]
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    PERMISSIONS_FIELD_NUMBER: _ClassVar[int]
    EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    REVOKE_TIME_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    CREATED_BY_FIELD_NUMBER: _ClassVar[int]
    LIVE_FIELD_NUMBER: _ClassVar[int]
    grant_id: str
    coordinator_id: str
    parent_coordinator_id: str
    permissions: _containers.RepeatedScalarFieldContainer[Grant.Permission]
    expire_time: _timestamp_pb2.Timestamp
    revoke_time: _timestamp_pb2.Timestamp
    create_time: _timestamp_pb2.Timestamp
    created_by: str
    live: bool
    def __init__(self, grant_id: _Optional[str] = ..., coordinator_id: _Optional[str] = ..., parent_coordinator_id: _Optional[str] = ..., permissions: _Optional[_Iterable[_Union[Grant.Permission, str]]] = ..., expire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., revoke_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., created_by: _Optional[str] = ..., live: _Optional[bool] = ...) -> None: ...

class LaneSummary(_message.Message):
    __slots__ = ("lane_id", "state", "priority", "next_action", "create_time", "update_time")
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    NEXT_ACTION_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    lane_id: str
    state: _lane_pb2.Lane.State
    priority: int
    next_action: str
    create_time: _timestamp_pb2.Timestamp
    update_time: _timestamp_pb2.Timestamp
    def __init__(self, lane_id: _Optional[str] = ..., state: _Optional[_Union[_lane_pb2.Lane.State, str]] = ..., priority: _Optional[int] = ..., next_action: _Optional[str] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ItemSummary(_message.Message):
    __slots__ = ("item_id", "lane_id", "kind", "state", "priority", "next_action", "create_time", "update_time")
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    NEXT_ACTION_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    item_id: str
    lane_id: str
    kind: _lane_pb2.Item.Kind
    state: _lane_pb2.Item.State
    priority: int
    next_action: str
    create_time: _timestamp_pb2.Timestamp
    update_time: _timestamp_pb2.Timestamp
    def __init__(self, item_id: _Optional[str] = ..., lane_id: _Optional[str] = ..., kind: _Optional[_Union[_lane_pb2.Item.Kind, str]] = ..., state: _Optional[_Union[_lane_pb2.Item.State, str]] = ..., priority: _Optional[int] = ..., next_action: _Optional[str] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ChildSummary(_message.Message):
    __slots__ = ("revision", "lanes", "items")
    REVISION_FIELD_NUMBER: _ClassVar[int]
    LANES_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    revision: int
    lanes: _containers.RepeatedCompositeFieldContainer[LaneSummary]
    items: _containers.RepeatedCompositeFieldContainer[ItemSummary]
    def __init__(self, revision: _Optional[int] = ..., lanes: _Optional[_Iterable[_Union[LaneSummary, _Mapping]]] = ..., items: _Optional[_Iterable[_Union[ItemSummary, _Mapping]]] = ...) -> None: ...

class CreateWorkCoordinatorRequest(_message.Message):
    __slots__ = ("work_coordinator", "request_id")
    WORK_COORDINATOR_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    work_coordinator: WorkCoordinator
    request_id: str
    def __init__(self, work_coordinator: _Optional[_Union[WorkCoordinator, _Mapping]] = ..., request_id: _Optional[str] = ...) -> None: ...

class CreateWorkCoordinatorResponse(_message.Message):
    __slots__ = ("work_coordinator",)
    WORK_COORDINATOR_FIELD_NUMBER: _ClassVar[int]
    work_coordinator: WorkCoordinator
    def __init__(self, work_coordinator: _Optional[_Union[WorkCoordinator, _Mapping]] = ...) -> None: ...

class ListWorkCoordinatorsRequest(_message.Message):
    __slots__ = ("page_size", "page_token", "org_slug")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    ORG_SLUG_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    org_slug: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., org_slug: _Optional[str] = ...) -> None: ...

class ListWorkCoordinatorsResponse(_message.Message):
    __slots__ = ("work_coordinators", "next_page_token")
    WORK_COORDINATORS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    work_coordinators: _containers.RepeatedCompositeFieldContainer[WorkCoordinator]
    next_page_token: str
    def __init__(self, work_coordinators: _Optional[_Iterable[_Union[WorkCoordinator, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetWorkCoordinatorRequest(_message.Message):
    __slots__ = ("coordinator_id",)
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    def __init__(self, coordinator_id: _Optional[str] = ...) -> None: ...

class GetWorkCoordinatorResponse(_message.Message):
    __slots__ = ("work_coordinator",)
    WORK_COORDINATOR_FIELD_NUMBER: _ClassVar[int]
    work_coordinator: WorkCoordinator
    def __init__(self, work_coordinator: _Optional[_Union[WorkCoordinator, _Mapping]] = ...) -> None: ...

class UpdateWorkCoordinatorRequest(_message.Message):
    __slots__ = ("coordinator_id", "work_coordinator", "update_mask")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    WORK_COORDINATOR_FIELD_NUMBER: _ClassVar[int]
    UPDATE_MASK_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    work_coordinator: WorkCoordinator
    update_mask: _field_mask_pb2.FieldMask
    def __init__(self, coordinator_id: _Optional[str] = ..., work_coordinator: _Optional[_Union[WorkCoordinator, _Mapping]] = ..., update_mask: _Optional[_Union[_field_mask_pb2.FieldMask, _Mapping]] = ...) -> None: ...

class UpdateWorkCoordinatorResponse(_message.Message):
    __slots__ = ("work_coordinator",)
    WORK_COORDINATOR_FIELD_NUMBER: _ClassVar[int]
    work_coordinator: WorkCoordinator
    def __init__(self, work_coordinator: _Optional[_Union[WorkCoordinator, _Mapping]] = ...) -> None: ...

class GetViewRequest(_message.Message):
    __slots__ = ("coordinator_id", "page_size", "page_token")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    page_size: int
    page_token: str
    def __init__(self, coordinator_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class GetViewResponse(_message.Message):
    __slots__ = ("view",)
    VIEW_FIELD_NUMBER: _ClassVar[int]
    view: View
    def __init__(self, view: _Optional[_Union[View, _Mapping]] = ...) -> None: ...

class ExplainRequest(_message.Message):
    __slots__ = ("coordinator_id", "lane_id", "item_id")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    lane_id: str
    item_id: str
    def __init__(self, coordinator_id: _Optional[str] = ..., lane_id: _Optional[str] = ..., item_id: _Optional[str] = ...) -> None: ...

class ExplainResponse(_message.Message):
    __slots__ = ("explanation",)
    EXPLANATION_FIELD_NUMBER: _ClassVar[int]
    explanation: Explanation
    def __init__(self, explanation: _Optional[_Union[Explanation, _Mapping]] = ...) -> None: ...

class GetUsageRequest(_message.Message):
    __slots__ = ("coordinator_id", "day", "lane_id", "group_by")
    class GroupBy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        GROUP_BY_UNSPECIFIED: _ClassVar[GetUsageRequest.GroupBy]
        LANE: _ClassVar[GetUsageRequest.GroupBy]
        WORKER_CLASS: _ClassVar[GetUsageRequest.GroupBy]
        MODEL: _ClassVar[GetUsageRequest.GroupBy]
        DAY: _ClassVar[GetUsageRequest.GroupBy]
    GROUP_BY_UNSPECIFIED: GetUsageRequest.GroupBy
    LANE: GetUsageRequest.GroupBy
    WORKER_CLASS: GetUsageRequest.GroupBy
    MODEL: GetUsageRequest.GroupBy
    DAY: GetUsageRequest.GroupBy
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    DAY_FIELD_NUMBER: _ClassVar[int]
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    GROUP_BY_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    day: str
    lane_id: str
    group_by: GetUsageRequest.GroupBy
    def __init__(self, coordinator_id: _Optional[str] = ..., day: _Optional[str] = ..., lane_id: _Optional[str] = ..., group_by: _Optional[_Union[GetUsageRequest.GroupBy, str]] = ...) -> None: ...

class GetUsageResponse(_message.Message):
    __slots__ = ("day", "total", "groups")
    DAY_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    day: str
    total: _lane_pb2.UsageTotal
    groups: _containers.RepeatedCompositeFieldContainer[_lane_pb2.UsageTotal]
    def __init__(self, day: _Optional[str] = ..., total: _Optional[_Union[_lane_pb2.UsageTotal, _Mapping]] = ..., groups: _Optional[_Iterable[_Union[_lane_pb2.UsageTotal, _Mapping]]] = ...) -> None: ...

class GetBudgetRequest(_message.Message):
    __slots__ = ("coordinator_id", "lane_id")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    lane_id: str
    def __init__(self, coordinator_id: _Optional[str] = ..., lane_id: _Optional[str] = ...) -> None: ...

class GetBudgetResponse(_message.Message):
    __slots__ = ("work_coordinator", "lane")
    WORK_COORDINATOR_FIELD_NUMBER: _ClassVar[int]
    LANE_FIELD_NUMBER: _ClassVar[int]
    work_coordinator: _lane_pb2.BudgetStatus
    lane: _lane_pb2.BudgetStatus
    def __init__(self, work_coordinator: _Optional[_Union[_lane_pb2.BudgetStatus, _Mapping]] = ..., lane: _Optional[_Union[_lane_pb2.BudgetStatus, _Mapping]] = ...) -> None: ...

class ListEventsRequest(_message.Message):
    __slots__ = ("coordinator_id", "since_revision", "page_size", "page_token", "lane_id", "item_id")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    SINCE_REVISION_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    since_revision: int
    page_size: int
    page_token: str
    lane_id: str
    item_id: str
    def __init__(self, coordinator_id: _Optional[str] = ..., since_revision: _Optional[int] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., lane_id: _Optional[str] = ..., item_id: _Optional[str] = ...) -> None: ...

class ListEventsResponse(_message.Message):
    __slots__ = ("events", "next_page_token", "revision")
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[_event_pb2.Event]
    next_page_token: str
    revision: int
    def __init__(self, events: _Optional[_Iterable[_Union[_event_pb2.Event, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., revision: _Optional[int] = ...) -> None: ...

class GetDigestRequest(_message.Message):
    __slots__ = ("coordinator_id", "day")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    DAY_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    day: str
    def __init__(self, coordinator_id: _Optional[str] = ..., day: _Optional[str] = ...) -> None: ...

class GetDigestResponse(_message.Message):
    __slots__ = ("digest",)
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    digest: Digest
    def __init__(self, digest: _Optional[_Union[Digest, _Mapping]] = ...) -> None: ...

class ListPendingActionsRequest(_message.Message):
    __slots__ = ("coordinator_id", "state", "page_size", "page_token")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    state: PendingAction.State
    page_size: int
    page_token: str
    def __init__(self, coordinator_id: _Optional[str] = ..., state: _Optional[_Union[PendingAction.State, str]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListPendingActionsResponse(_message.Message):
    __slots__ = ("pending_actions", "next_page_token")
    PENDING_ACTIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    pending_actions: _containers.RepeatedCompositeFieldContainer[PendingAction]
    next_page_token: str
    def __init__(self, pending_actions: _Optional[_Iterable[_Union[PendingAction, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ResolvePendingActionRequest(_message.Message):
    __slots__ = ("coordinator_id", "action_id", "resolution")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    ACTION_ID_FIELD_NUMBER: _ClassVar[int]
    RESOLUTION_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    action_id: str
    resolution: str
    def __init__(self, coordinator_id: _Optional[str] = ..., action_id: _Optional[str] = ..., resolution: _Optional[str] = ...) -> None: ...

class ResolvePendingActionResponse(_message.Message):
    __slots__ = ("pending_action",)
    PENDING_ACTION_FIELD_NUMBER: _ClassVar[int]
    pending_action: PendingAction
    def __init__(self, pending_action: _Optional[_Union[PendingAction, _Mapping]] = ...) -> None: ...

class CreateGrantRequest(_message.Message):
    __slots__ = ("coordinator_id", "grant", "request_id")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    GRANT_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    grant: Grant
    request_id: str
    def __init__(self, coordinator_id: _Optional[str] = ..., grant: _Optional[_Union[Grant, _Mapping]] = ..., request_id: _Optional[str] = ...) -> None: ...

class CreateGrantResponse(_message.Message):
    __slots__ = ("grant",)
    GRANT_FIELD_NUMBER: _ClassVar[int]
    grant: Grant
    def __init__(self, grant: _Optional[_Union[Grant, _Mapping]] = ...) -> None: ...

class ListGrantsRequest(_message.Message):
    __slots__ = ("coordinator_id", "page_size", "page_token")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    page_size: int
    page_token: str
    def __init__(self, coordinator_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListGrantsResponse(_message.Message):
    __slots__ = ("grants", "next_page_token")
    GRANTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    grants: _containers.RepeatedCompositeFieldContainer[Grant]
    next_page_token: str
    def __init__(self, grants: _Optional[_Iterable[_Union[Grant, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class RevokeGrantRequest(_message.Message):
    __slots__ = ("coordinator_id", "grant_id")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    GRANT_ID_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    grant_id: str
    def __init__(self, coordinator_id: _Optional[str] = ..., grant_id: _Optional[str] = ...) -> None: ...

class RevokeGrantResponse(_message.Message):
    __slots__ = ("grant",)
    GRANT_FIELD_NUMBER: _ClassVar[int]
    grant: Grant
    def __init__(self, grant: _Optional[_Union[Grant, _Mapping]] = ...) -> None: ...

class GetChildSummaryRequest(_message.Message):
    __slots__ = ("coordinator_id", "child_id")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    CHILD_ID_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    child_id: str
    def __init__(self, coordinator_id: _Optional[str] = ..., child_id: _Optional[str] = ...) -> None: ...

class GetChildSummaryResponse(_message.Message):
    __slots__ = ("summary",)
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    summary: ChildSummary
    def __init__(self, summary: _Optional[_Union[ChildSummary, _Mapping]] = ...) -> None: ...

class ListChildEscalationsRequest(_message.Message):
    __slots__ = ("coordinator_id", "child_id")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    CHILD_ID_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    child_id: str
    def __init__(self, coordinator_id: _Optional[str] = ..., child_id: _Optional[str] = ...) -> None: ...

class ListChildEscalationsResponse(_message.Message):
    __slots__ = ("escalations",)
    ESCALATIONS_FIELD_NUMBER: _ClassVar[int]
    escalations: _containers.RepeatedCompositeFieldContainer[Escalation]
    def __init__(self, escalations: _Optional[_Iterable[_Union[Escalation, _Mapping]]] = ...) -> None: ...

class AssignChildWorkRequest(_message.Message):
    __slots__ = ("coordinator_id", "child_id", "lane_id", "item_id", "worker_id")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    CHILD_ID_FIELD_NUMBER: _ClassVar[int]
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    child_id: str
    lane_id: str
    item_id: str
    worker_id: str
    def __init__(self, coordinator_id: _Optional[str] = ..., child_id: _Optional[str] = ..., lane_id: _Optional[str] = ..., item_id: _Optional[str] = ..., worker_id: _Optional[str] = ...) -> None: ...

class AssignChildWorkResponse(_message.Message):
    __slots__ = ("item",)
    ITEM_FIELD_NUMBER: _ClassVar[int]
    item: ItemSummary
    def __init__(self, item: _Optional[_Union[ItemSummary, _Mapping]] = ...) -> None: ...

class SteerChildWorkRequest(_message.Message):
    __slots__ = ("coordinator_id", "child_id", "lane_id", "priority")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    CHILD_ID_FIELD_NUMBER: _ClassVar[int]
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    child_id: str
    lane_id: str
    priority: int
    def __init__(self, coordinator_id: _Optional[str] = ..., child_id: _Optional[str] = ..., lane_id: _Optional[str] = ..., priority: _Optional[int] = ...) -> None: ...

class SteerChildWorkResponse(_message.Message):
    __slots__ = ("lane",)
    LANE_FIELD_NUMBER: _ClassVar[int]
    lane: LaneSummary
    def __init__(self, lane: _Optional[_Union[LaneSummary, _Mapping]] = ...) -> None: ...

class EscalateChildWorkRequest(_message.Message):
    __slots__ = ("coordinator_id", "child_id", "lane_id", "item_id", "reason")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    CHILD_ID_FIELD_NUMBER: _ClassVar[int]
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    child_id: str
    lane_id: str
    item_id: str
    reason: str
    def __init__(self, coordinator_id: _Optional[str] = ..., child_id: _Optional[str] = ..., lane_id: _Optional[str] = ..., item_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class EscalateChildWorkResponse(_message.Message):
    __slots__ = ("escalation",)
    ESCALATION_FIELD_NUMBER: _ClassVar[int]
    escalation: Escalation
    def __init__(self, escalation: _Optional[_Union[Escalation, _Mapping]] = ...) -> None: ...
