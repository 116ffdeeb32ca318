import datetime

from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Event(_message.Message):
    __slots__ = ("revision", "type", "time", "lane_id", "item_id", "lease_id", "actor", "data")
    class Type(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        TYPE_UNSPECIFIED: _ClassVar[Event.Type]
        COORDINATOR_CREATED: _ClassVar[Event.Type]
        COORDINATOR_UPDATED: _ClassVar[Event.Type]
        LANE_CREATED: _ClassVar[Event.Type]
        ITEM_CREATED: _ClassVar[Event.Type]
        ITEM_QUEUED: _ClassVar[Event.Type]
        ITEM_LEASED: _ClassVar[Event.Type]
        ITEM_STARTED: _ClassVar[Event.Type]
        ITEM_SUCCEEDED: _ClassVar[Event.Type]
        ITEM_FAILED: _ClassVar[Event.Type]
        RETRY_SCHEDULED: _ClassVar[Event.Type]
        ATTEMPT_EXPIRED: _ClassVar[Event.Type]
        ITEM_DEAD_LETTERED: _ClassVar[Event.Type]
        ITEM_CHECKPOINTED: _ClassVar[Event.Type]
        ITEM_RELEASED: _ClassVar[Event.Type]
        ITEM_STOPPED: _ClassVar[Event.Type]
        ITEM_RESUMED: _ClassVar[Event.Type]
        ITEM_CANCELLED: _ClassVar[Event.Type]
        APPROVAL_REQUESTED: _ClassVar[Event.Type]
        ITEM_APPROVED: _ClassVar[Event.Type]
        ITEM_DENIED: _ClassVar[Event.Type]
        ITEM_REDRIVEN: _ClassVar[Event.Type]
        REVIEW_PASSED: _ClassVar[Event.Type]
        REVIEW_FAILED: _ClassVar[Event.Type]
        LANE_PAUSED: _ClassVar[Event.Type]
        LANE_RESUMED: _ClassVar[Event.Type]
        LANE_CANCELLED: _ClassVar[Event.Type]
        LANE_LIVE: _ClassVar[Event.Type]
        LANE_DONE: _ClassVar[Event.Type]
        LANE_CLOSED_OUT: _ClassVar[Event.Type]
        BLOCKER_ADDED: _ClassVar[Event.Type]
        BLOCKER_RESOLVED: _ClassVar[Event.Type]
        TICKET_LINKED: _ClassVar[Event.Type]
        TICKET_CLOSED: _ClassVar[Event.Type]
        TICKET_SYNCED: _ClassVar[Event.Type]
        PENDING_ACTION_OPENED: _ClassVar[Event.Type]
        PENDING_ACTION_RETRIED: _ClassVar[Event.Type]
        PENDING_ACTION_RESOLVED: _ClassVar[Event.Type]
        ESCALATED: _ClassVar[Event.Type]
        WORKER_REGISTERED: _ClassVar[Event.Type]
        WORKER_EVICTED: _ClassVar[Event.Type]
        GRANT_CREATED: _ClassVar[Event.Type]
        GRANT_REVOKED: _ClassVar[Event.Type]
        PARENT_ACTION: _ClassVar[Event.Type]
        WORKER_FENCED: _ClassVar[Event.Type]
        WORKER_UNFENCED: _ClassVar[Event.Type]
        WORKER_FORGOTTEN: _ClassVar[Event.Type]
        POLICY_WEAKENED: _ClassVar[Event.Type]
        LANE_UPDATED: _ClassVar[Event.Type]
        POLICY_NARROWED: _ClassVar[Event.Type]
        BUDGET_WARNING: _ClassVar[Event.Type]
        BUDGET_EXHAUSTED: _ClassVar[Event.Type]
    TYPE_UNSPECIFIED: Event.Type
    COORDINATOR_CREATED: Event.Type
    COORDINATOR_UPDATED: Event.Type
    LANE_CREATED: Event.Type
    ITEM_CREATED: Event.Type
    ITEM_QUEUED: Event.Type
    ITEM_LEASED: Event.Type
    ITEM_STARTED: Event.Type
    ITEM_SUCCEEDED: Event.Type
    ITEM_FAILED: Event.Type
    RETRY_SCHEDULED: Event.Type
    ATTEMPT_EXPIRED: Event.Type
    ITEM_DEAD_LETTERED: Event.Type
    ITEM_CHECKPOINTED: Event.Type
    ITEM_RELEASED: Event.Type
    ITEM_STOPPED: Event.Type
    ITEM_RESUMED: Event.Type
    ITEM_CANCELLED: Event.Type
    APPROVAL_REQUESTED: Event.Type
    ITEM_APPROVED: Event.Type
    ITEM_DENIED: Event.Type
    ITEM_REDRIVEN: Event.Type
    REVIEW_PASSED: Event.Type
    REVIEW_FAILED: Event.Type
    LANE_PAUSED: Event.Type
    LANE_RESUMED: Event.Type
    LANE_CANCELLED: Event.Type
    LANE_LIVE: Event.Type
    LANE_DONE: Event.Type
    LANE_CLOSED_OUT: Event.Type
    BLOCKER_ADDED: Event.Type
    BLOCKER_RESOLVED: Event.Type
    TICKET_LINKED: Event.Type
    TICKET_CLOSED: Event.Type
    TICKET_SYNCED: Event.Type
    PENDING_ACTION_OPENED: Event.Type
    PENDING_ACTION_RETRIED: Event.Type
    PENDING_ACTION_RESOLVED: Event.Type
    ESCALATED: Event.Type
    WORKER_REGISTERED: Event.Type
    WORKER_EVICTED: Event.Type
    GRANT_CREATED: Event.Type
    GRANT_REVOKED: Event.Type
    PARENT_ACTION: Event.Type
    WORKER_FENCED: Event.Type
    WORKER_UNFENCED: Event.Type
    WORKER_FORGOTTEN: Event.Type
    POLICY_WEAKENED: Event.Type
    LANE_UPDATED: Event.Type
    POLICY_NARROWED: Event.Type
    BUDGET_WARNING: Event.Type
    BUDGET_EXHAUSTED: Event.Type
    REVISION_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    LANE_ID_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    revision: int
    type: Event.Type
    time: _timestamp_pb2.Timestamp
    lane_id: str
    item_id: str
    lease_id: str
    actor: str
    data: _struct_pb2.Struct
    def __init__(self, revision: _Optional[int] = ..., type: _Optional[_Union[Event.Type, str]] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., lane_id: _Optional[str] = ..., item_id: _Optional[str] = ..., lease_id: _Optional[str] = ..., actor: _Optional[str] = ..., data: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...
