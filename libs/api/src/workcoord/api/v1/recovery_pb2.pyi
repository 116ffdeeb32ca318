import datetime

from google.api import annotations_pb2 as _annotations_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from workcoord.api.v1 import field_rules_pb2 as _field_rules_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MaintenanceReport(_message.Message):
    __slots__ = ("coordinator_id", "expired_attempts", "requeued", "dead_lettered", "escalated", "evicted_workers", "pending_actions_attempted", "pending_actions_succeeded", "tickets_synced", "revision", "start_time", "duration", "skipped_disabled", "step_failures")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    EXPIRED_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    REQUEUED_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTERED_FIELD_NUMBER: _ClassVar[int]
    ESCALATED_FIELD_NUMBER: _ClassVar[int]
    EVICTED_WORKERS_FIELD_NUMBER: _ClassVar[int]
    PENDING_ACTIONS_ATTEMPTED_FIELD_NUMBER: _ClassVar[int]
    PENDING_ACTIONS_SUCCEEDED_FIELD_NUMBER: _ClassVar[int]
    TICKETS_SYNCED_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_DISABLED_FIELD_NUMBER: _ClassVar[int]
    STEP_FAILURES_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    expired_attempts: int
    requeued: int
    dead_lettered: int
    escalated: int
    evicted_workers: int
    pending_actions_attempted: int
    pending_actions_succeeded: int
    tickets_synced: int
    revision: int
    start_time: _timestamp_pb2.Timestamp
    duration: _duration_pb2.Duration
    skipped_disabled: bool
    step_failures: _containers.RepeatedCompositeFieldContainer[StepFailure]
    def __init__(self, coordinator_id: _Optional[str] = ..., expired_attempts: _Optional[int] = ..., requeued: _Optional[int] = ..., dead_lettered: _Optional[int] = ..., escalated: _Optional[int] = ..., evicted_workers: _Optional[int] = ..., pending_actions_attempted: _Optional[int] = ..., pending_actions_succeeded: _Optional[int] = ..., tickets_synced: _Optional[int] = ..., revision: _Optional[int] = ..., start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., duration: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., skipped_disabled: _Optional[bool] = ..., step_failures: _Optional[_Iterable[_Union[StepFailure, _Mapping]]] = ...) -> None: ...

class StepFailure(_message.Message):
    __slots__ = ("step", "failures", "error")
    STEP_FIELD_NUMBER: _ClassVar[int]
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    step: str
    failures: int
    error: str
    def __init__(self, step: _Optional[str] = ..., failures: _Optional[int] = ..., error: _Optional[str] = ...) -> None: ...

class StepFailureCount(_message.Message):
    __slots__ = ("step", "failed_passes", "last_error", "coordinator_id", "last_failure_time")
    STEP_FIELD_NUMBER: _ClassVar[int]
    FAILED_PASSES_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_FAILURE_TIME_FIELD_NUMBER: _ClassVar[int]
    step: str
    failed_passes: int
    last_error: str
    coordinator_id: str
    last_failure_time: _timestamp_pb2.Timestamp
    def __init__(self, step: _Optional[str] = ..., failed_passes: _Optional[int] = ..., last_error: _Optional[str] = ..., coordinator_id: _Optional[str] = ..., last_failure_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class MaintainRequest(_message.Message):
    __slots__ = ("coordinator_id",)
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    def __init__(self, coordinator_id: _Optional[str] = ...) -> None: ...

class MaintainResponse(_message.Message):
    __slots__ = ("report",)
    REPORT_FIELD_NUMBER: _ClassVar[int]
    report: MaintenanceReport
    def __init__(self, report: _Optional[_Union[MaintenanceReport, _Mapping]] = ...) -> None: ...

class CoordinatorPass(_message.Message):
    __slots__ = ("coordinator_id", "pass_time", "report", "error")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    PASS_TIME_FIELD_NUMBER: _ClassVar[int]
    REPORT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    pass_time: _timestamp_pb2.Timestamp
    report: MaintenanceReport
    error: str
    def __init__(self, coordinator_id: _Optional[str] = ..., pass_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., report: _Optional[_Union[MaintenanceReport, _Mapping]] = ..., error: _Optional[str] = ...) -> None: ...

class RecoveryStatus(_message.Message):
    __slots__ = ("replica_id", "leader", "leader_id", "leadership_expire_time", "interval", "passes_total", "last_pass_time", "coordinators", "last_error", "step_failures")
    REPLICA_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADERSHIP_EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_FIELD_NUMBER: _ClassVar[int]
    PASSES_TOTAL_FIELD_NUMBER: _ClassVar[int]
    LAST_PASS_TIME_FIELD_NUMBER: _ClassVar[int]
    COORDINATORS_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    STEP_FAILURES_FIELD_NUMBER: _ClassVar[int]
    replica_id: str
    leader: bool
    leader_id: str
    leadership_expire_time: _timestamp_pb2.Timestamp
    interval: _duration_pb2.Duration
    passes_total: int
    last_pass_time: _timestamp_pb2.Timestamp
    coordinators: _containers.RepeatedCompositeFieldContainer[CoordinatorPass]
    last_error: str
    step_failures: _containers.RepeatedCompositeFieldContainer[StepFailureCount]
    def __init__(self, replica_id: _Optional[str] = ..., leader: _Optional[bool] = ..., leader_id: _Optional[str] = ..., leadership_expire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., interval: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., passes_total: _Optional[int] = ..., last_pass_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., coordinators: _Optional[_Iterable[_Union[CoordinatorPass, _Mapping]]] = ..., last_error: _Optional[str] = ..., step_failures: _Optional[_Iterable[_Union[StepFailureCount, _Mapping]]] = ...) -> None: ...

class GetRecoveryStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetRecoveryStatusResponse(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: RecoveryStatus
    def __init__(self, status: _Optional[_Union[RecoveryStatus, _Mapping]] = ...) -> None: ...
