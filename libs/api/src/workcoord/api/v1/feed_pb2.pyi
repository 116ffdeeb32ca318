from google.api import annotations_pb2 as _annotations_pb2
from workcoord.api.v1 import event_pb2 as _event_pb2
from workcoord.api.v1 import field_rules_pb2 as _field_rules_pb2
from workcoord.api.v1 import work_coordinator_pb2 as _work_coordinator_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class WatchRequest(_message.Message):
    __slots__ = ("coordinator_id", "since")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    since: int
    def __init__(self, coordinator_id: _Optional[str] = ..., since: _Optional[int] = ...) -> None: ...

class WatchResponse(_message.Message):
    __slots__ = ("hello", "snapshot", "delta", "ping", "resync")
    HELLO_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    PING_FIELD_NUMBER: _ClassVar[int]
    RESYNC_FIELD_NUMBER: _ClassVar[int]
    hello: Hello
    snapshot: Snapshot
    delta: Delta
    ping: Ping
    resync: Resync
    def __init__(self, hello: _Optional[_Union[Hello, _Mapping]] = ..., snapshot: _Optional[_Union[Snapshot, _Mapping]] = ..., delta: _Optional[_Union[Delta, _Mapping]] = ..., ping: _Optional[_Union[Ping, _Mapping]] = ..., resync: _Optional[_Union[Resync, _Mapping]] = ...) -> None: ...

class Hello(_message.Message):
    __slots__ = ("coordinator_id", "revision", "ping_seconds", "resume_from")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    PING_SECONDS_FIELD_NUMBER: _ClassVar[int]
    RESUME_FROM_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    revision: int
    ping_seconds: int
    resume_from: int
    def __init__(self, coordinator_id: _Optional[str] = ..., revision: _Optional[int] = ..., ping_seconds: _Optional[int] = ..., resume_from: _Optional[int] = ...) -> None: ...

class Snapshot(_message.Message):
    __slots__ = ("revision", "view")
    REVISION_FIELD_NUMBER: _ClassVar[int]
    VIEW_FIELD_NUMBER: _ClassVar[int]
    revision: int
    view: _work_coordinator_pb2.View
    def __init__(self, revision: _Optional[int] = ..., view: _Optional[_Union[_work_coordinator_pb2.View, _Mapping]] = ...) -> None: ...

class Delta(_message.Message):
    __slots__ = ("from_revision", "to_revision", "events")
    FROM_REVISION_FIELD_NUMBER: _ClassVar[int]
    TO_REVISION_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    from_revision: int
    to_revision: int
    events: _containers.RepeatedCompositeFieldContainer[_event_pb2.Event]
    def __init__(self, from_revision: _Optional[int] = ..., to_revision: _Optional[int] = ..., events: _Optional[_Iterable[_Union[_event_pb2.Event, _Mapping]]] = ...) -> None: ...

class Ping(_message.Message):
    __slots__ = ("revision",)
    REVISION_FIELD_NUMBER: _ClassVar[int]
    revision: int
    def __init__(self, revision: _Optional[int] = ...) -> None: ...

class Resync(_message.Message):
    __slots__ = ("reason", "revision")
    REASON_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    reason: str
    revision: int
    def __init__(self, reason: _Optional[str] = ..., revision: _Optional[int] = ...) -> None: ...
