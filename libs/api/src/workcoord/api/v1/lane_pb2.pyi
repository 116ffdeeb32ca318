import datetime

from google.api import annotations_pb2 as _annotations_pb2
from google.api import field_behavior_pb2 as _field_behavior_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import field_mask_pb2 as _field_mask_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from workcoord.api.v1 import field_rules_pb2 as _field_rules_pb2
from workcoord.api.v1 import policy_pb2 as _policy_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Lane(_message.Message):
    __slots__ = ("lane_id", "coordinator_id", "title", "template", "priority", "inputs", "state", "next_action", "items", "tickets", "blockers", "paused", "worker_classes", "retry_policy", "review_policy", "placement", "brief", "fail_rounds", "close_reason", "receipt", "create_time", "update_time", "etag", "usage", "budget", "inputs_redacted")
    class Template(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        TEMPLATE_UNSPECIFIED: _ClassVar[Lane.Template]
        STANDARD: _ClassVar[Lane.Template]
        CUSTOM: _ClassVar[Lane.Template]
    TEMPLATE_UNSPECIFIED: Lane.Template
    STANDARD: Lane.Template
    CUSTOM: Lane.Template
    class State(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        STATE_UNSPECIFIED: _ClassVar[Lane.State]
        ACTIVE: _ClassVar[Lane.State]
        LIVE: _ClassVar[Lane.State]
        DONE: _ClassVar[Lane.State]
        CLOSED_OUT: _ClassVar[Lane.State]
        CANCELLED: _ClassVar[Lane.State]
    STATE_UNSPECIFIED: Lane.State
    ACTIVE: Lane.State
    LIVE: Lane.State
    DONE: Lane.State
    CLOSED_OUT: Lane.State
    CANCELLED: Lane.State
    class WorkerClasses(_message.Message):
        __slots__ = ("build", "review", "fix", "integrate", "ship")
        BUILD_FIELD_NUMBER: _ClassVar[int]
        REVIEW_FIELD_NUMBER: _ClassVar[int]
        FIX_FIELD_NUMBER: _ClassVar[int]
        INTEGRATE_FIELD_NUMBER: _ClassVar[int]
        SHIP_FIELD_NUMBER: _ClassVar[int]
        build: str
        review: str
        fix: str
        integrate: str
        ship: str
        def __init__(self, build: _Optional[str] = ..., review: _Optional[str] = ..., fix: _Optional[str] = ..., integrate: _Optional[str] = ..., ship: _Optional[str] = ...) -> None: ...
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    NEXT_ACTION_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    TICKETS_FIELD_NUMBER: _ClassVar[int]
    BLOCKERS_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    WORKER_CLASSES_FIELD_NUMBER: _ClassVar[int]
    RETRY_POLICY_FIELD_NUMBER: _ClassVar[int]
    REVIEW_POLICY_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_FIELD_NUMBER: _ClassVar[int]
    BRIEF_FIELD_NUMBER: _ClassVar[int]
    FAIL_ROUNDS_FIELD_NUMBER: _ClassVar[int]
    CLOSE_REASON_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    ETAG_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    BUDGET_FIELD_NUMBER: _ClassVar[int]
    INPUTS_REDACTED_FIELD_NUMBER: _ClassVar[int]
    lane_id: str
    coordinator_id: str
    title: str
    template: Lane.Template
    priority: int
    inputs: _struct_pb2.Struct
    state: Lane.State
    next_action: str
    items: _containers.RepeatedCompositeFieldContainer[Item]
    tickets: _containers.RepeatedCompositeFieldContainer[Ticket]
    blockers: _containers.RepeatedCompositeFieldContainer[Blocker]
    paused: bool
    worker_classes: Lane.WorkerClasses
    retry_policy: _policy_pb2.RetryPolicy
    review_policy: _policy_pb2.ReviewPolicy
    placement: _policy_pb2.Placement
    brief: str
    fail_rounds: int
    close_reason: str
    receipt: Receipt
    create_time: _timestamp_pb2.Timestamp
    update_time: _timestamp_pb2.Timestamp
    etag: str
    usage: UsageTotal
    budget: LaneBudget
    inputs_redacted: bool
    def __init__(self, lane_id: _Optional[str] = ..., coordinator_id: _Optional[str] = ..., title: _Optional[str] = ..., template: _Optional[_Union[Lane.Template, str]] = ..., priority: _Optional[int] = ..., inputs: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., state: _Optional[_Union[Lane.State, str]] = ..., next_action: _Optional[str] = ..., items: _Optional[_Iterable[_Union[Item, _Mapping]]] = ..., tickets: _Optional[_Iterable[_Union[Ticket, _Mapping]]] = ..., blockers: _Optional[_Iterable[_Union[Blocker, _Mapping]]] = ..., paused: _Optional[bool] = ..., worker_classes: _Optional[_Union[Lane.WorkerClasses, _Mapping]] = ..., retry_policy: _Optional[_Union[_policy_pb2.RetryPolicy, _Mapping]] = ..., review_policy: _Optional[_Union[_policy_pb2.ReviewPolicy, _Mapping]] = ..., placement: _Optional[_Union[_policy_pb2.Placement, _Mapping]] = ..., brief: _Optional[str] = ..., fail_rounds: _Optional[int] = ..., close_reason: _Optional[str] = ..., receipt: _Optional[_Union[Receipt, _Mapping]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., etag: _Optional[str] = ..., usage: _Optional[_Union[UsageTotal, _Mapping]] = ..., budget: _Optional[_Union[LaneBudget, _Mapping]] = ..., inputs_redacted: _Optional[bool] = ...) -> None: ...

class Item(_message.Message):
    __slots__ = ("item_id", "lane_id", "key", "kind", "worker_class", "title", "brief", "depends_on", "inputs", "placement", "exclusive_key", "priority", "retry_policy", "action_classes", "needs_human", "requires_approval", "state", "attempt_count", "not_before", "dead_letter_reason", "stop_reason", "evidence", "attempts", "next_action", "current_lease_id", "last_error", "create_time", "update_time", "usage", "max_run_duration", "inputs_redacted")
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        KIND_UNSPECIFIED: _ClassVar[Item.Kind]
        BUILD: _ClassVar[Item.Kind]
        REVIEW: _ClassVar[Item.Kind]
        FIX: _ClassVar[Item.Kind]
        INTEGRATE: _ClassVar[Item.Kind]
        SHIP: _ClassVar[Item.Kind]
        TASK: _ClassVar[Item.Kind]
    KIND_UNSPECIFIED: Item.Kind
    BUILD: Item.Kind
    REVIEW: Item.Kind
    FIX: Item.Kind
    INTEGRATE: Item.Kind
    SHIP: Item.Kind
    TASK: Item.Kind
    class State(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        STATE_UNSPECIFIED: _ClassVar[Item.State]
        WAITING: _ClassVar[Item.State]
        QUEUED: _ClassVar[Item.State]
        LEASED: _ClassVar[Item.State]
        RUNNING: _ClassVar[Item.State]
        SUCCEEDED: _ClassVar[Item.State]
        DEAD: _ClassVar[Item.State]
        CANCELLED: _ClassVar[Item.State]
        AWAITING_APPROVAL: _ClassVar[Item.State]
        STOPPED: _ClassVar[Item.State]
    STATE_UNSPECIFIED: Item.State
    WAITING: Item.State
    QUEUED: Item.State
    LEASED: Item.State
    RUNNING: Item.State
    SUCCEEDED: Item.State
    DEAD: Item.State
    CANCELLED: Item.State
    AWAITING_APPROVAL: Item.State
    STOPPED: Item.State
    class DeadLetterReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        DEAD_LETTER_REASON_UNSPECIFIED: _ClassVar[Item.DeadLetterReason]
        EXHAUSTED: _ClassVar[Item.DeadLetterReason]
        NON_RETRYABLE: _ClassVar[Item.DeadLetterReason]
        POLICY: _ClassVar[Item.DeadLetterReason]
    DEAD_LETTER_REASON_UNSPECIFIED: Item.DeadLetterReason
    EXHAUSTED: Item.DeadLetterReason
    NON_RETRYABLE: Item.DeadLetterReason
    POLICY: Item.DeadLetterReason
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    WORKER_CLASS_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    BRIEF_FIELD_NUMBER: _ClassVar[int]
    DEPENDS_ON_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_FIELD_NUMBER: _ClassVar[int]
    EXCLUSIVE_KEY_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    RETRY_POLICY_FIELD_NUMBER: _ClassVar[int]
    ACTION_CLASSES_FIELD_NUMBER: _ClassVar[int]
    NEEDS_HUMAN_FIELD_NUMBER: _ClassVar[int]
    REQUIRES_APPROVAL_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_COUNT_FIELD_NUMBER: _ClassVar[int]
    NOT_BEFORE_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTER_REASON_FIELD_NUMBER: _ClassVar[int]
    STOP_REASON_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_ACTION_FIELD_NUMBER: _ClassVar[int]
    CURRENT_LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    MAX_RUN_DURATION_FIELD_NUMBER: _ClassVar[int]
    INPUTS_REDACTED_FIELD_NUMBER: _ClassVar[int]
    item_id: str
    lane_id: str
    key: str
    kind: Item.Kind
    worker_class: str
    title: str
    brief: str
    depends_on: _containers.RepeatedScalarFieldContainer[str]
    inputs: _struct_pb2.Struct
    placement: _policy_pb2.Placement
    exclusive_key: str
    priority: int
    retry_policy: _policy_pb2.RetryPolicy
    action_classes: _containers.RepeatedScalarFieldContainer[str]
    needs_human: bool
    requires_approval: bool
    state: Item.State
    attempt_count: int
    not_before: _timestamp_pb2.Timestamp
    dead_letter_reason: Item.DeadLetterReason
    stop_reason: str
    evidence: Evidence
    attempts: _containers.RepeatedCompositeFieldContainer[Attempt]
    next_action: str
    current_lease_id: str
    last_error: ErrorInfo
    create_time: _timestamp_pb2.Timestamp
    update_time: _timestamp_pb2.Timestamp
    usage: UsageTotal
    max_run_duration: _duration_pb2.Duration
    inputs_redacted: bool
    def __init__(self, item_id: _Optional[str] = ..., lane_id: _Optional[str] = ..., key: _Optional[str] = ..., kind: _Optional[_Union[Item.Kind, str]] = ..., worker_class: _Optional[str] = ..., title: _Optional[str] = ..., brief: _Optional[str] = ..., depends_on: _Optional[_Iterable[str]] = ..., inputs: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., placement: _Optional[_Union[_policy_pb2.Placement, _Mapping]] = ..., exclusive_key: _Optional[str] = ..., priority: _Optional[int] = ..., retry_policy: _Optional[_Union[_policy_pb2.RetryPolicy, _Mapping]] = ..., action_classes: _Optional[_Iterable[str]] = ..., needs_human: _Optional[bool] = ..., requires_approval: _Optional[bool] = ..., state: _Optional[_Union[Item.State, str]] = ..., attempt_count: _Optional[int] = ..., not_before: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., dead_letter_reason: _Optional[_Union[Item.DeadLetterReason, str]] = ..., stop_reason: _Optional[str] = ..., evidence: _Optional[_Union[Evidence, _Mapping]] = ..., attempts: _Optional[_Iterable[_Union[Attempt, _Mapping]]] = ..., next_action: _Optional[str] = ..., current_lease_id: _Optional[str] = ..., last_error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., usage: _Optional[_Union[UsageTotal, _Mapping]] = ..., max_run_duration: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., inputs_redacted: _Optional[bool] = ...) -> None: ...

class RunIdentity(_message.Message):
    __slots__ = ("pid", "agent_id", "engine", "account", "hostname", "worktree_path", "branch", "started_at")
    PID_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    ENGINE_FIELD_NUMBER: _ClassVar[int]
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    WORKTREE_PATH_FIELD_NUMBER: _ClassVar[int]
    BRANCH_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    pid: int
    agent_id: str
    engine: str
    account: str
    hostname: str
    worktree_path: str
    branch: str
    started_at: _timestamp_pb2.Timestamp
    def __init__(self, pid: _Optional[int] = ..., agent_id: _Optional[str] = ..., engine: _Optional[str] = ..., account: _Optional[str] = ..., hostname: _Optional[str] = ..., worktree_path: _Optional[str] = ..., branch: _Optional[str] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Attempt(_message.Message):
    __slots__ = ("lease_id", "item_id", "attempt", "status", "run_identity", "worker_id", "principal", "lease_seconds", "lease_expire_time", "create_time", "start_time", "end_time", "progress", "error", "continues_lease_id", "counted", "usage", "deadline_time", "checkpoint", "checkpoint_redacted")
    class Status(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        STATUS_UNSPECIFIED: _ClassVar[Attempt.Status]
        LEASED: _ClassVar[Attempt.Status]
        RUNNING: _ClassVar[Attempt.Status]
        COMPLETED: _ClassVar[Attempt.Status]
        FAILED: _ClassVar[Attempt.Status]
        CHECKPOINTED: _ClassVar[Attempt.Status]
        RELEASED: _ClassVar[Attempt.Status]
        DEAD: _ClassVar[Attempt.Status]
    STATUS_UNSPECIFIED: Attempt.Status
    LEASED: Attempt.Status
    RUNNING: Attempt.Status
    COMPLETED: Attempt.Status
    FAILED: Attempt.Status
    CHECKPOINTED: Attempt.Status
    RELEASED: Attempt.Status
    DEAD: Attempt.Status
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    RUN_IDENTITY_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    LEASE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    LEASE_EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CONTINUES_LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    COUNTED_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_TIME_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_REDACTED_FIELD_NUMBER: _ClassVar[int]
    lease_id: str
    item_id: str
    attempt: int
    status: Attempt.Status
    run_identity: RunIdentity
    worker_id: str
    principal: str
    lease_seconds: int
    lease_expire_time: _timestamp_pb2.Timestamp
    create_time: _timestamp_pb2.Timestamp
    start_time: _timestamp_pb2.Timestamp
    end_time: _timestamp_pb2.Timestamp
    progress: str
    error: ErrorInfo
    continues_lease_id: str
    counted: bool
    usage: Usage
    deadline_time: _timestamp_pb2.Timestamp
    checkpoint: Checkpoint
    checkpoint_redacted: bool
    def __init__(self, lease_id: _Optional[str] = ..., item_id: _Optional[str] = ..., attempt: _Optional[int] = ..., status: _Optional[_Union[Attempt.Status, str]] = ..., run_identity: _Optional[_Union[RunIdentity, _Mapping]] = ..., worker_id: _Optional[str] = ..., principal: _Optional[str] = ..., lease_seconds: _Optional[int] = ..., lease_expire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., progress: _Optional[str] = ..., error: _Optional[_Union[ErrorInfo, _Mapping]] = ..., continues_lease_id: _Optional[str] = ..., counted: _Optional[bool] = ..., usage: _Optional[_Union[Usage, _Mapping]] = ..., deadline_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., checkpoint: _Optional[_Union[Checkpoint, _Mapping]] = ..., checkpoint_redacted: _Optional[bool] = ...) -> None: ...

class LaneBudget(_message.Message):
    __slots__ = ("cost_micros", "tokens")
    COST_MICROS_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    cost_micros: int
    tokens: int
    def __init__(self, cost_micros: _Optional[int] = ..., tokens: _Optional[int] = ...) -> None: ...

class DayBudget(_message.Message):
    __slots__ = ("daily_cost_micros", "daily_tokens")
    DAILY_COST_MICROS_FIELD_NUMBER: _ClassVar[int]
    DAILY_TOKENS_FIELD_NUMBER: _ClassVar[int]
    daily_cost_micros: int
    daily_tokens: int
    def __init__(self, daily_cost_micros: _Optional[int] = ..., daily_tokens: _Optional[int] = ...) -> None: ...

class BudgetStatus(_message.Message):
    __slots__ = ("scope", "lane_id", "day", "cost_limit_micros", "token_limit", "cost_used_micros", "tokens_used", "cost_left_micros", "tokens_left", "spent", "message")
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    DAY_FIELD_NUMBER: _ClassVar[int]
    COST_LIMIT_MICROS_FIELD_NUMBER: _ClassVar[int]
    TOKEN_LIMIT_FIELD_NUMBER: _ClassVar[int]
    COST_USED_MICROS_FIELD_NUMBER: _ClassVar[int]
    TOKENS_USED_FIELD_NUMBER: _ClassVar[int]
    COST_LEFT_MICROS_FIELD_NUMBER: _ClassVar[int]
    TOKENS_LEFT_FIELD_NUMBER: _ClassVar[int]
    SPENT_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    scope: str
    lane_id: str
    day: str
    cost_limit_micros: int
    token_limit: int
    cost_used_micros: int
    tokens_used: int
    cost_left_micros: int
    tokens_left: int
    spent: bool
    message: str
    def __init__(self, scope: _Optional[str] = ..., lane_id: _Optional[str] = ..., day: _Optional[str] = ..., cost_limit_micros: _Optional[int] = ..., token_limit: _Optional[int] = ..., cost_used_micros: _Optional[int] = ..., tokens_used: _Optional[int] = ..., cost_left_micros: _Optional[int] = ..., tokens_left: _Optional[int] = ..., spent: _Optional[bool] = ..., message: _Optional[str] = ...) -> None: ...

class UsageTotal(_message.Message):
    __slots__ = ("key", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost_micros", "tokens")
    KEY_FIELD_NUMBER: _ClassVar[int]
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_READ_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_WRITE_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COST_MICROS_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    key: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_micros: int
    tokens: int
    def __init__(self, key: _Optional[str] = ..., input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ..., cache_read_tokens: _Optional[int] = ..., cache_write_tokens: _Optional[int] = ..., cost_micros: _Optional[int] = ..., tokens: _Optional[int] = ...) -> None: ...

class Usage(_message.Message):
    __slots__ = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost_micros", "model")
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_READ_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_WRITE_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COST_MICROS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_micros: int
    model: str
    def __init__(self, input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ..., cache_read_tokens: _Optional[int] = ..., cache_write_tokens: _Optional[int] = ..., cost_micros: _Optional[int] = ..., model: _Optional[str] = ...) -> None: ...

class ErrorInfo(_message.Message):
    __slots__ = ("message", "type", "retryable")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    RETRYABLE_FIELD_NUMBER: _ClassVar[int]
    message: str
    type: str
    retryable: bool
    def __init__(self, message: _Optional[str] = ..., type: _Optional[str] = ..., retryable: _Optional[bool] = ...) -> None: ...

class Evidence(_message.Message):
    __slots__ = ("summary", "links", "artifacts", "checks", "verdict", "findings", "receipt")
    class Verdict(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        VERDICT_UNSPECIFIED: _ClassVar[Evidence.Verdict]
        PASS: _ClassVar[Evidence.Verdict]
        FAIL: _ClassVar[Evidence.Verdict]
    VERDICT_UNSPECIFIED: Evidence.Verdict
    PASS: Evidence.Verdict
    FAIL: Evidence.Verdict
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    LINKS_FIELD_NUMBER: _ClassVar[int]
    ARTIFACTS_FIELD_NUMBER: _ClassVar[int]
    CHECKS_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    FINDINGS_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_FIELD_NUMBER: _ClassVar[int]
    summary: str
    links: _containers.RepeatedScalarFieldContainer[str]
    artifacts: _containers.RepeatedCompositeFieldContainer[Artifact]
    checks: _containers.RepeatedCompositeFieldContainer[Check]
    verdict: Evidence.Verdict
    findings: _containers.RepeatedScalarFieldContainer[str]
    receipt: Receipt
    def __init__(self, summary: _Optional[str] = ..., links: _Optional[_Iterable[str]] = ..., artifacts: _Optional[_Iterable[_Union[Artifact, _Mapping]]] = ..., checks: _Optional[_Iterable[_Union[Check, _Mapping]]] = ..., verdict: _Optional[_Union[Evidence.Verdict, str]] = ..., findings: _Optional[_Iterable[str]] = ..., receipt: _Optional[_Union[Receipt, _Mapping]] = ...) -> None: ...

class Artifact(_message.Message):
    __slots__ = ("name", "uri", "sha256")
    NAME_FIELD_NUMBER: _ClassVar[int]
    URI_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    name: str
    uri: str
    sha256: str
    def __init__(self, name: _Optional[str] = ..., uri: _Optional[str] = ..., sha256: _Optional[str] = ...) -> None: ...

class Check(_message.Message):
    __slots__ = ("name", "status")
    class Status(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        STATUS_UNSPECIFIED: _ClassVar[Check.Status]
        PASSED: _ClassVar[Check.Status]
        FAILED: _ClassVar[Check.Status]
        SKIPPED: _ClassVar[Check.Status]
    STATUS_UNSPECIFIED: Check.Status
    PASSED: Check.Status
    FAILED: Check.Status
    SKIPPED: Check.Status
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    name: str
    status: Check.Status
    def __init__(self, name: _Optional[str] = ..., status: _Optional[_Union[Check.Status, str]] = ...) -> None: ...

class Receipt(_message.Message):
    __slots__ = ("environment", "version", "url", "time")
    ENVIRONMENT_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    environment: str
    version: str
    url: str
    time: _timestamp_pb2.Timestamp
    def __init__(self, environment: _Optional[str] = ..., version: _Optional[str] = ..., url: _Optional[str] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Checkpoint(_message.Message):
    __slots__ = ("summary", "files_changed", "next_action", "blocked_reason")
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    FILES_CHANGED_FIELD_NUMBER: _ClassVar[int]
    NEXT_ACTION_FIELD_NUMBER: _ClassVar[int]
    BLOCKED_REASON_FIELD_NUMBER: _ClassVar[int]
    summary: str
    files_changed: _containers.RepeatedScalarFieldContainer[str]
    next_action: str
    blocked_reason: str
    def __init__(self, summary: _Optional[str] = ..., files_changed: _Optional[_Iterable[str]] = ..., next_action: _Optional[str] = ..., blocked_reason: _Optional[str] = ...) -> None: ...

class Ticket(_message.Message):
    __slots__ = ("tracker", "key", "url", "state", "observe_time")
    class State(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        STATE_UNSPECIFIED: _ClassVar[Ticket.State]
        OPEN: _ClassVar[Ticket.State]
        CLOSED: _ClassVar[Ticket.State]
    STATE_UNSPECIFIED: Ticket.State
    OPEN: Ticket.State
    CLOSED: Ticket.State
    TRACKER_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    OBSERVE_TIME_FIELD_NUMBER: _ClassVar[int]
    tracker: str
    key: str
    url: str
    state: Ticket.State
    observe_time: _timestamp_pb2.Timestamp
    def __init__(self, tracker: _Optional[str] = ..., key: _Optional[str] = ..., url: _Optional[str] = ..., state: _Optional[_Union[Ticket.State, str]] = ..., observe_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Blocker(_message.Message):
    __slots__ = ("blocker_id", "reason", "open", "create_time", "resolve_time")
    BLOCKER_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    OPEN_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    RESOLVE_TIME_FIELD_NUMBER: _ClassVar[int]
    blocker_id: str
    reason: str
    open: bool
    create_time: _timestamp_pb2.Timestamp
    resolve_time: _timestamp_pb2.Timestamp
    def __init__(self, blocker_id: _Optional[str] = ..., reason: _Optional[str] = ..., open: _Optional[bool] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., resolve_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CreateLaneRequest(_message.Message):
    __slots__ = ("coordinator_id", "lane", "request_id")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    LANE_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    lane: Lane
    request_id: str
    def __init__(self, coordinator_id: _Optional[str] = ..., lane: _Optional[_Union[Lane, _Mapping]] = ..., request_id: _Optional[str] = ...) -> None: ...

class CreateLaneResponse(_message.Message):
    __slots__ = ("lane",)
    LANE_FIELD_NUMBER: _ClassVar[int]
    lane: Lane
    def __init__(self, lane: _Optional[_Union[Lane, _Mapping]] = ...) -> None: ...

class ListLanesRequest(_message.Message):
    __slots__ = ("coordinator_id", "state", "page_size", "page_token")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    state: Lane.State
    page_size: int
    page_token: str
    def __init__(self, coordinator_id: _Optional[str] = ..., state: _Optional[_Union[Lane.State, str]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListLanesResponse(_message.Message):
    __slots__ = ("lanes", "next_page_token")
    LANES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    lanes: _containers.RepeatedCompositeFieldContainer[Lane]
    next_page_token: str
    def __init__(self, lanes: _Optional[_Iterable[_Union[Lane, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetLaneRequest(_message.Message):
    __slots__ = ("coordinator_id", "lane_id")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    lane_id: str
    def __init__(self, coordinator_id: _Optional[str] = ..., lane_id: _Optional[str] = ...) -> None: ...

class GetLaneResponse(_message.Message):
    __slots__ = ("lane",)
    LANE_FIELD_NUMBER: _ClassVar[int]
    lane: Lane
    def __init__(self, lane: _Optional[_Union[Lane, _Mapping]] = ...) -> None: ...

class UpdateLaneRequest(_message.Message):
    __slots__ = ("coordinator_id", "lane_id", "lane", "update_mask")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    LANE_FIELD_NUMBER: _ClassVar[int]
    UPDATE_MASK_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    lane_id: str
    lane: Lane
    update_mask: _field_mask_pb2.FieldMask
    def __init__(self, coordinator_id: _Optional[str] = ..., lane_id: _Optional[str] = ..., lane: _Optional[_Union[Lane, _Mapping]] = ..., update_mask: _Optional[_Union[_field_mask_pb2.FieldMask, _Mapping]] = ...) -> None: ...

class UpdateLaneResponse(_message.Message):
    __slots__ = ("lane",)
    LANE_FIELD_NUMBER: _ClassVar[int]
    lane: Lane
    def __init__(self, lane: _Optional[_Union[Lane, _Mapping]] = ...) -> None: ...

class PauseLaneRequest(_message.Message):
    __slots__ = ("coordinator_id", "lane_id", "reason")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    lane_id: str
    reason: str
    def __init__(self, coordinator_id: _Optional[str] = ..., lane_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class PauseLaneResponse(_message.Message):
    __slots__ = ("lane",)
    LANE_FIELD_NUMBER: _ClassVar[int]
    lane: Lane
    def __init__(self, lane: _Optional[_Union[Lane, _Mapping]] = ...) -> None: ...

class ResumeLaneRequest(_message.Message):
    __slots__ = ("coordinator_id", "lane_id", "reason")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    lane_id: str
    reason: str
    def __init__(self, coordinator_id: _Optional[str] = ..., lane_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ResumeLaneResponse(_message.Message):
    __slots__ = ("lane",)
    LANE_FIELD_NUMBER: _ClassVar[int]
    lane: Lane
    def __init__(self, lane: _Optional[_Union[Lane, _Mapping]] = ...) -> None: ...

class CancelLaneRequest(_message.Message):
    __slots__ = ("coordinator_id", "lane_id", "reason")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    lane_id: str
    reason: str
    def __init__(self, coordinator_id: _Optional[str] = ..., lane_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class CancelLaneResponse(_message.Message):
    __slots__ = ("lane",)
    LANE_FIELD_NUMBER: _ClassVar[int]
    lane: Lane
    def __init__(self, lane: _Optional[_Union[Lane, _Mapping]] = ...) -> None: ...

class AddBlockerRequest(_message.Message):
    __slots__ = ("coordinator_id", "lane_id", "blocker")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    BLOCKER_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    lane_id: str
    blocker: Blocker
    def __init__(self, coordinator_id: _Optional[str] = ..., lane_id: _Optional[str] = ..., blocker: _Optional[_Union[Blocker, _Mapping]] = ...) -> None: ...

class AddBlockerResponse(_message.Message):
    __slots__ = ("lane",)
    LANE_FIELD_NUMBER: _ClassVar[int]
    lane: Lane
    def __init__(self, lane: _Optional[_Union[Lane, _Mapping]] = ...) -> None: ...

class ResolveBlockerRequest(_message.Message):
    __slots__ = ("coordinator_id", "lane_id", "blocker_id", "note")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    BLOCKER_ID_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    lane_id: str
    blocker_id: str
    note: str
    def __init__(self, coordinator_id: _Optional[str] = ..., lane_id: _Optional[str] = ..., blocker_id: _Optional[str] = ..., note: _Optional[str] = ...) -> None: ...

class ResolveBlockerResponse(_message.Message):
    __slots__ = ("lane",)
    LANE_FIELD_NUMBER: _ClassVar[int]
    lane: Lane
    def __init__(self, lane: _Optional[_Union[Lane, _Mapping]] = ...) -> None: ...

class LinkTicketRequest(_message.Message):
    __slots__ = ("coordinator_id", "lane_id", "ticket")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    TICKET_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    lane_id: str
    ticket: Ticket
    def __init__(self, coordinator_id: _Optional[str] = ..., lane_id: _Optional[str] = ..., ticket: _Optional[_Union[Ticket, _Mapping]] = ...) -> None: ...

class LinkTicketResponse(_message.Message):
    __slots__ = ("lane",)
    LANE_FIELD_NUMBER: _ClassVar[int]
    lane: Lane
    def __init__(self, lane: _Optional[_Union[Lane, _Mapping]] = ...) -> None: ...

class CreateItemRequest(_message.Message):
    __slots__ = ("coordinator_id", "lane_id", "item", "request_id")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    ITEM_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    lane_id: str
    item: Item
    request_id: str
    def __init__(self, coordinator_id: _Optional[str] = ..., lane_id: _Optional[str] = ..., item: _Optional[_Union[Item, _Mapping]] = ..., request_id: _Optional[str] = ...) -> None: ...

class CreateItemResponse(_message.Message):
    __slots__ = ("item",)
    ITEM_FIELD_NUMBER: _ClassVar[int]
    item: Item
    def __init__(self, item: _Optional[_Union[Item, _Mapping]] = ...) -> None: ...

class GetItemRequest(_message.Message):
    __slots__ = ("coordinator_id", "lane_id", "item_id")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    lane_id: str
    item_id: str
    def __init__(self, coordinator_id: _Optional[str] = ..., lane_id: _Optional[str] = ..., item_id: _Optional[str] = ...) -> None: ...

class GetItemResponse(_message.Message):
    __slots__ = ("item",)
    ITEM_FIELD_NUMBER: _ClassVar[int]
    item: Item
    def __init__(self, item: _Optional[_Union[Item, _Mapping]] = ...) -> None: ...

class ApproveItemRequest(_message.Message):
    __slots__ = ("coordinator_id", "lane_id", "item_id", "note")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    lane_id: str
    item_id: str
    note: str
    def __init__(self, coordinator_id: _Optional[str] = ..., lane_id: _Optional[str] = ..., item_id: _Optional[str] = ..., note: _Optional[str] = ...) -> None: ...

class ApproveItemResponse(_message.Message):
    __slots__ = ("item",)
    ITEM_FIELD_NUMBER: _ClassVar[int]
    item: Item
    def __init__(self, item: _Optional[_Union[Item, _Mapping]] = ...) -> None: ...

class DenyItemRequest(_message.Message):
    __slots__ = ("coordinator_id", "lane_id", "item_id", "note")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    lane_id: str
    item_id: str
    note: str
    def __init__(self, coordinator_id: _Optional[str] = ..., lane_id: _Optional[str] = ..., item_id: _Optional[str] = ..., note: _Optional[str] = ...) -> None: ...

class DenyItemResponse(_message.Message):
    __slots__ = ("item",)
    ITEM_FIELD_NUMBER: _ClassVar[int]
    item: Item
    def __init__(self, item: _Optional[_Union[Item, _Mapping]] = ...) -> None: ...

class ResumeItemRequest(_message.Message):
    __slots__ = ("coordinator_id", "lane_id", "item_id", "note")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    lane_id: str
    item_id: str
    note: str
    def __init__(self, coordinator_id: _Optional[str] = ..., lane_id: _Optional[str] = ..., item_id: _Optional[str] = ..., note: _Optional[str] = ...) -> None: ...

class ResumeItemResponse(_message.Message):
    __slots__ = ("item",)
    ITEM_FIELD_NUMBER: _ClassVar[int]
    item: Item
    def __init__(self, item: _Optional[_Union[Item, _Mapping]] = ...) -> None: ...

class CancelItemRequest(_message.Message):
    __slots__ = ("coordinator_id", "lane_id", "item_id", "note")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    lane_id: str
    item_id: str
    note: str
    def __init__(self, coordinator_id: _Optional[str] = ..., lane_id: _Optional[str] = ..., item_id: _Optional[str] = ..., note: _Optional[str] = ...) -> None: ...

class CancelItemResponse(_message.Message):
    __slots__ = ("item",)
    ITEM_FIELD_NUMBER: _ClassVar[int]
    item: Item
    def __init__(self, item: _Optional[_Union[Item, _Mapping]] = ...) -> None: ...

class RetryItemRequest(_message.Message):
    __slots__ = ("coordinator_id", "lane_id", "item_id", "note")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    lane_id: str
    item_id: str
    note: str
    def __init__(self, coordinator_id: _Optional[str] = ..., lane_id: _Optional[str] = ..., item_id: _Optional[str] = ..., note: _Optional[str] = ...) -> None: ...

class RetryItemResponse(_message.Message):
    __slots__ = ("item",)
    ITEM_FIELD_NUMBER: _ClassVar[int]
    item: Item
    def __init__(self, item: _Optional[_Union[Item, _Mapping]] = ...) -> None: ...
