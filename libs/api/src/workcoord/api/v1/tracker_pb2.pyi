import datetime

from google.api import annotations_pb2 as _annotations_pb2
from google.api import field_behavior_pb2 as _field_behavior_pb2
from google.protobuf import field_mask_pb2 as _field_mask_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from workcoord.api.v1 import field_rules_pb2 as _field_rules_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TrackerConnection(_message.Message):
    __slots__ = ("tracker_id", "coordinator_id", "tracker", "base_url", "credential", "projects", "done_status", "credential_set", "credential_fingerprint", "created_by", "create_time", "update_time", "last_success_time", "last_error", "last_error_time")
    TRACKER_ID_FIELD_NUMBER: _ClassVar[int]
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    TRACKER_FIELD_NUMBER: _ClassVar[int]
    BASE_URL_FIELD_NUMBER: _ClassVar[int]
    CREDENTIAL_FIELD_NUMBER: _ClassVar[int]
    PROJECTS_FIELD_NUMBER: _ClassVar[int]
    DONE_STATUS_FIELD_NUMBER: _ClassVar[int]
    CREDENTIAL_SET_FIELD_NUMBER: _ClassVar[int]
    CREDENTIAL_FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    CREATED_BY_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_SUCCESS_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_TIME_FIELD_NUMBER: _ClassVar[int]
    tracker_id: str
    coordinator_id: str
    tracker: str
    base_url: str
    credential: str
    projects: _containers.RepeatedScalarFieldContainer[str]
    done_status: str
    credential_set: bool
    credential_fingerprint: str
    created_by: str
    create_time: _timestamp_pb2.Timestamp
    update_time: _timestamp_pb2.Timestamp
    last_success_time: _timestamp_pb2.Timestamp
    last_error: str
    last_error_time: _timestamp_pb2.Timestamp
    def __init__(self, tracker_id: _Optional[str] = ..., coordinator_id: _Optional[str] = ..., tracker: _Optional[str] = ..., base_url: _Optional[str] = ..., credential: _Optional[str] = ..., projects: _Optional[_Iterable[str]] = ..., done_status: _Optional[str] = ..., credential_set: _Optional[bool] = ..., credential_fingerprint: _Optional[str] = ..., created_by: _Optional[str] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_success_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_error: _Optional[str] = ..., last_error_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CreateTrackerConnectionRequest(_message.Message):
    __slots__ = ("coordinator_id", "tracker_connection")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    TRACKER_CONNECTION_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    tracker_connection: TrackerConnection
    def __init__(self, coordinator_id: _Optional[str] = ..., tracker_connection: _Optional[_Union[TrackerConnection, _Mapping]] = ...) -> None: ...

class CreateTrackerConnectionResponse(_message.Message):
    __slots__ = ("tracker_connection",)
    TRACKER_CONNECTION_FIELD_NUMBER: _ClassVar[int]
    tracker_connection: TrackerConnection
    def __init__(self, tracker_connection: _Optional[_Union[TrackerConnection, _Mapping]] = ...) -> None: ...

class ListTrackerConnectionsRequest(_message.Message):
    __slots__ = ("coordinator_id", "page_size", "page_token")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    page_size: int
    page_token: str
    def __init__(self, coordinator_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListTrackerConnectionsResponse(_message.Message):
    __slots__ = ("tracker_connections", "next_page_token")
    TRACKER_CONNECTIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    tracker_connections: _containers.RepeatedCompositeFieldContainer[TrackerConnection]
    next_page_token: str
    def __init__(self, tracker_connections: _Optional[_Iterable[_Union[TrackerConnection, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class UpdateTrackerConnectionRequest(_message.Message):
    __slots__ = ("coordinator_id", "tracker_id", "tracker_connection", "update_mask")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    TRACKER_ID_FIELD_NUMBER: _ClassVar[int]
    TRACKER_CONNECTION_FIELD_NUMBER: _ClassVar[int]
    UPDATE_MASK_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    tracker_id: str
    tracker_connection: TrackerConnection
    update_mask: _field_mask_pb2.FieldMask
    def __init__(self, coordinator_id: _Optional[str] = ..., tracker_id: _Optional[str] = ..., tracker_connection: _Optional[_Union[TrackerConnection, _Mapping]] = ..., update_mask: _Optional[_Union[_field_mask_pb2.FieldMask, _Mapping]] = ...) -> None: ...

class UpdateTrackerConnectionResponse(_message.Message):
    __slots__ = ("tracker_connection",)
    TRACKER_CONNECTION_FIELD_NUMBER: _ClassVar[int]
    tracker_connection: TrackerConnection
    def __init__(self, tracker_connection: _Optional[_Union[TrackerConnection, _Mapping]] = ...) -> None: ...

class DeleteTrackerConnectionRequest(_message.Message):
    __slots__ = ("coordinator_id", "tracker_id")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    TRACKER_ID_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    tracker_id: str
    def __init__(self, coordinator_id: _Optional[str] = ..., tracker_id: _Optional[str] = ...) -> None: ...

class DeleteTrackerConnectionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
