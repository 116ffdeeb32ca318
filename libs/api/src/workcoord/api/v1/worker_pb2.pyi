import datetime

from google.api import annotations_pb2 as _annotations_pb2
from google.api import field_behavior_pb2 as _field_behavior_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.rpc import status_pb2 as _status_pb2
from workcoord.api.v1 import field_rules_pb2 as _field_rules_pb2
from workcoord.api.v1 import lane_pb2 as _lane_pb2
from workcoord.api.v1 import policy_pb2 as _policy_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Worker(_message.Message):
    __slots__ = ("worker_id", "worker_class", "capabilities", "toolchains", "labels", "cpu_count", "memory_bytes", "disk_bytes", "observe_time", "create_time", "principal", "active_leases", "fence", "worker_classes")
    class ToolchainsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    WORKER_CLASS_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    TOOLCHAINS_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    CPU_COUNT_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    DISK_BYTES_FIELD_NUMBER: _ClassVar[int]
    OBSERVE_TIME_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_LEASES_FIELD_NUMBER: _ClassVar[int]
    FENCE_FIELD_NUMBER: _ClassVar[int]
    WORKER_CLASSES_FIELD_NUMBER: _ClassVar[int]
    worker_id: str
    worker_class: str
    capabilities: _containers.RepeatedScalarFieldContainer[str]
    toolchains: _containers.ScalarMap[str, str]
    labels: _containers.ScalarMap[str, str]
    cpu_count: int
    memory_bytes: int
    disk_bytes: int
    observe_time: _timestamp_pb2.Timestamp
    create_time: _timestamp_pb2.Timestamp
    principal: str
    active_leases: int
    fence: WorkerFence
    worker_classes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, worker_id: _Optional[str] = ..., worker_class: _Optional[str] = ..., capabilities: _Optional[_Iterable[str]] = ..., toolchains: _Optional[_Mapping[str, str]] = ..., labels: _Optional[_Mapping[str, str]] = ..., cpu_count: _Optional[int] = ..., memory_bytes: _Optional[int] = ..., disk_bytes: _Optional[int] = ..., observe_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., principal: _Optional[str] = ..., active_leases: _Optional[int] = ..., fence: _Optional[_Union[WorkerFence, _Mapping]] = ..., worker_classes: _Optional[_Iterable[str]] = ...) -> None: ...

class WorkerFence(_message.Message):
    __slots__ = ("reason", "lease_id", "item_id", "lane_id", "exclusive", "since", "expire_time")
    REASON_FIELD_NUMBER: _ClassVar[int]
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    EXCLUSIVE_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    reason: str
    lease_id: str
    item_id: str
    lane_id: str
    exclusive: _containers.RepeatedScalarFieldContainer[str]
    since: _timestamp_pb2.Timestamp
    expire_time: _timestamp_pb2.Timestamp
    def __init__(self, reason: _Optional[str] = ..., lease_id: _Optional[str] = ..., item_id: _Optional[str] = ..., lane_id: _Optional[str] = ..., exclusive: _Optional[_Iterable[str]] = ..., since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class LeasedItem(_message.Message):
    __slots__ = ("item_id", "lane_id", "key", "kind", "worker_class", "title", "brief", "inputs", "placement", "exclusive_key", "continues_lease_id", "checkpoint", "action_classes")
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    WORKER_CLASS_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    BRIEF_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_FIELD_NUMBER: _ClassVar[int]
    EXCLUSIVE_KEY_FIELD_NUMBER: _ClassVar[int]
    CONTINUES_LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    ACTION_CLASSES_FIELD_NUMBER: _ClassVar[int]
    item_id: str
    lane_id: str
    key: str
    kind: _lane_pb2.Item.Kind
    worker_class: str
    title: str
    brief: str
    inputs: _struct_pb2.Struct
    placement: _policy_pb2.Placement
    exclusive_key: str
    continues_lease_id: str
    checkpoint: _lane_pb2.Checkpoint
    action_classes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, item_id: _Optional[str] = ..., lane_id: _Optional[str] = ..., key: _Optional[str] = ..., kind: _Optional[_Union[_lane_pb2.Item.Kind, str]] = ..., worker_class: _Optional[str] = ..., title: _Optional[str] = ..., brief: _Optional[str] = ..., inputs: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., placement: _Optional[_Union[_policy_pb2.Placement, _Mapping]] = ..., exclusive_key: _Optional[str] = ..., continues_lease_id: _Optional[str] = ..., checkpoint: _Optional[_Union[_lane_pb2.Checkpoint, _Mapping]] = ..., action_classes: _Optional[_Iterable[str]] = ...) -> None: ...

class Lease(_message.Message):
    __slots__ = ("lease_id", "lease_token", "attempt", "lease_expire_time", "item", "status")
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    LEASE_EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    ITEM_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    lease_id: str
    lease_token: str
    attempt: int
    lease_expire_time: _timestamp_pb2.Timestamp
    item: LeasedItem
    status: _lane_pb2.Attempt.Status
    def __init__(self, lease_id: _Optional[str] = ..., lease_token: _Optional[str] = ..., attempt: _Optional[int] = ..., lease_expire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., item: _Optional[_Union[LeasedItem, _Mapping]] = ..., status: _Optional[_Union[_lane_pb2.Attempt.Status, str]] = ...) -> None: ...

class ReportWorkerRequest(_message.Message):
    __slots__ = ("coordinator_id", "worker")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    WORKER_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    worker: Worker
    def __init__(self, coordinator_id: _Optional[str] = ..., worker: _Optional[_Union[Worker, _Mapping]] = ...) -> None: ...

class ReportWorkerResponse(_message.Message):
    __slots__ = ("worker",)
    WORKER_FIELD_NUMBER: _ClassVar[int]
    worker: Worker
    def __init__(self, worker: _Optional[_Union[Worker, _Mapping]] = ...) -> None: ...

class ListWorkersRequest(_message.Message):
    __slots__ = ("coordinator_id", "page_size", "page_token")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    page_size: int
    page_token: str
    def __init__(self, coordinator_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListWorkersResponse(_message.Message):
    __slots__ = ("workers", "next_page_token")
    WORKERS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    workers: _containers.RepeatedCompositeFieldContainer[Worker]
    next_page_token: str
    def __init__(self, workers: _Optional[_Iterable[_Union[Worker, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ForgetWorkerRequest(_message.Message):
    __slots__ = ("coordinator_id", "worker_id")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    worker_id: str
    def __init__(self, coordinator_id: _Optional[str] = ..., worker_id: _Optional[str] = ...) -> None: ...

class ForgetWorkerResponse(_message.Message):
    __slots__ = ("worker",)
    WORKER_FIELD_NUMBER: _ClassVar[int]
    worker: Worker
    def __init__(self, worker: _Optional[_Union[Worker, _Mapping]] = ...) -> None: ...

class LeaseRequest(_message.Message):
    __slots__ = ("coordinator_id", "worker_id", "worker_class", "max_items", "lease_seconds", "wait_seconds", "run_identity", "request_id", "worker_classes")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    WORKER_CLASS_FIELD_NUMBER: _ClassVar[int]
    MAX_ITEMS_FIELD_NUMBER: _ClassVar[int]
    LEASE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    WAIT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    RUN_IDENTITY_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    WORKER_CLASSES_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    worker_id: str
    worker_class: str
    max_items: int
    lease_seconds: int
    wait_seconds: int
    run_identity: _lane_pb2.RunIdentity
    request_id: str
    worker_classes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, coordinator_id: _Optional[str] = ..., worker_id: _Optional[str] = ..., worker_class: _Optional[str] = ..., max_items: _Optional[int] = ..., lease_seconds: _Optional[int] = ..., wait_seconds: _Optional[int] = ..., run_identity: _Optional[_Union[_lane_pb2.RunIdentity, _Mapping]] = ..., request_id: _Optional[str] = ..., worker_classes: _Optional[_Iterable[str]] = ...) -> None: ...

class LeaseResponse(_message.Message):
    __slots__ = ("leases",)
    LEASES_FIELD_NUMBER: _ClassVar[int]
    leases: _containers.RepeatedCompositeFieldContainer[Lease]
    def __init__(self, leases: _Optional[_Iterable[_Union[Lease, _Mapping]]] = ...) -> None: ...

class StartRequest(_message.Message):
    __slots__ = ("coordinator_id", "lease_id", "lease_token", "run_identity")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    RUN_IDENTITY_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    lease_id: str
    lease_token: str
    run_identity: _lane_pb2.RunIdentity
    def __init__(self, coordinator_id: _Optional[str] = ..., lease_id: _Optional[str] = ..., lease_token: _Optional[str] = ..., run_identity: _Optional[_Union[_lane_pb2.RunIdentity, _Mapping]] = ...) -> None: ...

class StartResponse(_message.Message):
    __slots__ = ("attempt",)
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    attempt: _lane_pb2.Attempt
    def __init__(self, attempt: _Optional[_Union[_lane_pb2.Attempt, _Mapping]] = ...) -> None: ...

class HeartbeatRequest(_message.Message):
    __slots__ = ("coordinator_id", "lease_id", "lease_token", "progress", "usage")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    lease_id: str
    lease_token: str
    progress: str
    usage: _lane_pb2.Usage
    def __init__(self, coordinator_id: _Optional[str] = ..., lease_id: _Optional[str] = ..., lease_token: _Optional[str] = ..., progress: _Optional[str] = ..., usage: _Optional[_Union[_lane_pb2.Usage, _Mapping]] = ...) -> None: ...

class HeartbeatResponse(_message.Message):
    __slots__ = ("lease_expire_time", "stop")
    LEASE_EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    STOP_FIELD_NUMBER: _ClassVar[int]
    lease_expire_time: _timestamp_pb2.Timestamp
    stop: Stop
    def __init__(self, lease_expire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., stop: _Optional[_Union[Stop, _Mapping]] = ...) -> None: ...

class Stop(_message.Message):
    __slots__ = ("reason", "message")
    class Reason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        REASON_UNSPECIFIED: _ClassVar[Stop.Reason]
        BUDGET_EXHAUSTED: _ClassVar[Stop.Reason]
        DEADLINE_EXCEEDED: _ClassVar[Stop.Reason]
        POLICY_CHANGED: _ClassVar[Stop.Reason]
        CANCELLED: _ClassVar[Stop.Reason]
    REASON_UNSPECIFIED: Stop.Reason
    BUDGET_EXHAUSTED: Stop.Reason
    DEADLINE_EXCEEDED: Stop.Reason
    POLICY_CHANGED: Stop.Reason
    CANCELLED: Stop.Reason
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    reason: Stop.Reason
    message: str
    def __init__(self, reason: _Optional[_Union[Stop.Reason, str]] = ..., message: _Optional[str] = ...) -> None: ...

class CompleteRequest(_message.Message):
    __slots__ = ("coordinator_id", "lease_id", "lease_token", "evidence", "usage")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    lease_id: str
    lease_token: str
    evidence: _lane_pb2.Evidence
    usage: _lane_pb2.Usage
    def __init__(self, coordinator_id: _Optional[str] = ..., lease_id: _Optional[str] = ..., lease_token: _Optional[str] = ..., evidence: _Optional[_Union[_lane_pb2.Evidence, _Mapping]] = ..., usage: _Optional[_Union[_lane_pb2.Usage, _Mapping]] = ...) -> None: ...

class CompleteResponse(_message.Message):
    __slots__ = ("attempt",)
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    attempt: _lane_pb2.Attempt
    def __init__(self, attempt: _Optional[_Union[_lane_pb2.Attempt, _Mapping]] = ...) -> None: ...

class FailRequest(_message.Message):
    __slots__ = ("coordinator_id", "lease_id", "lease_token", "error", "usage")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    lease_id: str
    lease_token: str
    error: _lane_pb2.ErrorInfo
    usage: _lane_pb2.Usage
    def __init__(self, coordinator_id: _Optional[str] = ..., lease_id: _Optional[str] = ..., lease_token: _Optional[str] = ..., error: _Optional[_Union[_lane_pb2.ErrorInfo, _Mapping]] = ..., usage: _Optional[_Union[_lane_pb2.Usage, _Mapping]] = ...) -> None: ...

class FailResponse(_message.Message):
    __slots__ = ("attempt",)
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    attempt: _lane_pb2.Attempt
    def __init__(self, attempt: _Optional[_Union[_lane_pb2.Attempt, _Mapping]] = ...) -> None: ...

class CheckpointRequest(_message.Message):
    __slots__ = ("coordinator_id", "lease_id", "lease_token", "checkpoint", "usage")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    lease_id: str
    lease_token: str
    checkpoint: _lane_pb2.Checkpoint
    usage: _lane_pb2.Usage
    def __init__(self, coordinator_id: _Optional[str] = ..., lease_id: _Optional[str] = ..., lease_token: _Optional[str] = ..., checkpoint: _Optional[_Union[_lane_pb2.Checkpoint, _Mapping]] = ..., usage: _Optional[_Union[_lane_pb2.Usage, _Mapping]] = ...) -> None: ...

class CheckpointResponse(_message.Message):
    __slots__ = ("attempt",)
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    attempt: _lane_pb2.Attempt
    def __init__(self, attempt: _Optional[_Union[_lane_pb2.Attempt, _Mapping]] = ...) -> None: ...

class ReleaseRequest(_message.Message):
    __slots__ = ("coordinator_id", "lease_id", "lease_token", "reason")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    lease_id: str
    lease_token: str
    reason: str
    def __init__(self, coordinator_id: _Optional[str] = ..., lease_id: _Optional[str] = ..., lease_token: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ReleaseResponse(_message.Message):
    __slots__ = ("attempt",)
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    attempt: _lane_pb2.Attempt
    def __init__(self, attempt: _Optional[_Union[_lane_pb2.Attempt, _Mapping]] = ...) -> None: ...

class BatchHeartbeatRequest(_message.Message):
    __slots__ = ("coordinator_id", "requests")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    requests: _containers.RepeatedCompositeFieldContainer[HeartbeatRequest]
    def __init__(self, coordinator_id: _Optional[str] = ..., requests: _Optional[_Iterable[_Union[HeartbeatRequest, _Mapping]]] = ...) -> None: ...

class BatchHeartbeatResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[BatchHeartbeatResult]
    def __init__(self, results: _Optional[_Iterable[_Union[BatchHeartbeatResult, _Mapping]]] = ...) -> None: ...

class BatchHeartbeatResult(_message.Message):
    __slots__ = ("lease_id", "status", "lease_expire_time", "stop")
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    LEASE_EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    STOP_FIELD_NUMBER: _ClassVar[int]
    lease_id: str
    status: _status_pb2.Status
    lease_expire_time: _timestamp_pb2.Timestamp
    stop: Stop
    def __init__(self, lease_id: _Optional[str] = ..., status: _Optional[_Union[_status_pb2.Status, _Mapping]] = ..., lease_expire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., stop: _Optional[_Union[Stop, _Mapping]] = ...) -> None: ...

class BatchCompleteRequest(_message.Message):
    __slots__ = ("coordinator_id", "requests")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    requests: _containers.RepeatedCompositeFieldContainer[CompleteRequest]
    def __init__(self, coordinator_id: _Optional[str] = ..., requests: _Optional[_Iterable[_Union[CompleteRequest, _Mapping]]] = ...) -> None: ...

class BatchCompleteResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[BatchCompleteResult]
    def __init__(self, results: _Optional[_Iterable[_Union[BatchCompleteResult, _Mapping]]] = ...) -> None: ...

class BatchCompleteResult(_message.Message):
    __slots__ = ("lease_id", "status", "attempt")
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    lease_id: str
    status: _status_pb2.Status
    attempt: _lane_pb2.Attempt
    def __init__(self, lease_id: _Optional[str] = ..., status: _Optional[_Union[_status_pb2.Status, _Mapping]] = ..., attempt: _Optional[_Union[_lane_pb2.Attempt, _Mapping]] = ...) -> None: ...

class BatchFailRequest(_message.Message):
    __slots__ = ("coordinator_id", "requests")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    requests: _containers.RepeatedCompositeFieldContainer[FailRequest]
    def __init__(self, coordinator_id: _Optional[str] = ..., requests: _Optional[_Iterable[_Union[FailRequest, _Mapping]]] = ...) -> None: ...

class BatchFailResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[BatchFailResult]
    def __init__(self, results: _Optional[_Iterable[_Union[BatchFailResult, _Mapping]]] = ...) -> None: ...

class BatchFailResult(_message.Message):
    __slots__ = ("lease_id", "status", "attempt")
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    lease_id: str
    status: _status_pb2.Status
    attempt: _lane_pb2.Attempt
    def __init__(self, lease_id: _Optional[str] = ..., status: _Optional[_Union[_status_pb2.Status, _Mapping]] = ..., attempt: _Optional[_Union[_lane_pb2.Attempt, _Mapping]] = ...) -> None: ...
