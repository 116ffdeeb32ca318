import datetime

from google.api import annotations_pb2 as _annotations_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from workcoord.api.v1 import event_pb2 as _event_pb2
from workcoord.api.v1 import field_rules_pb2 as _field_rules_pb2
from workcoord.api.v1 import recovery_pb2 as _recovery_pb2
from workcoord.api.v1 import work_coordinator_pb2 as _work_coordinator_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MaintenanceTarget(_message.Message):
    __slots__ = ("coordinator_id", "revision")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    revision: int
    def __init__(self, coordinator_id: _Optional[str] = ..., revision: _Optional[int] = ...) -> None: ...

class Leadership(_message.Message):
    __slots__ = ("name", "holder_id", "expire_time", "held", "term")
    NAME_FIELD_NUMBER: _ClassVar[int]
    HOLDER_ID_FIELD_NUMBER: _ClassVar[int]
    EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    HELD_FIELD_NUMBER: _ClassVar[int]
    TERM_FIELD_NUMBER: _ClassVar[int]
    name: str
    holder_id: str
    expire_time: _timestamp_pb2.Timestamp
    held: bool
    term: int
    def __init__(self, name: _Optional[str] = ..., holder_id: _Optional[str] = ..., expire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., held: _Optional[bool] = ..., term: _Optional[int] = ...) -> None: ...

class ListMaintenanceTargetsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListMaintenanceTargetsResponse(_message.Message):
    __slots__ = ("platform_enabled", "targets")
    PLATFORM_ENABLED_FIELD_NUMBER: _ClassVar[int]
    TARGETS_FIELD_NUMBER: _ClassVar[int]
    platform_enabled: bool
    targets: _containers.RepeatedCompositeFieldContainer[MaintenanceTarget]
    def __init__(self, platform_enabled: _Optional[bool] = ..., targets: _Optional[_Iterable[_Union[MaintenanceTarget, _Mapping]]] = ...) -> None: ...

class RunMaintenanceRequest(_message.Message):
    __slots__ = ("coordinator_id", "batch_size")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    BATCH_SIZE_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    batch_size: int
    def __init__(self, coordinator_id: _Optional[str] = ..., batch_size: _Optional[int] = ...) -> None: ...

class RunMaintenanceResponse(_message.Message):
    __slots__ = ("report",)
    REPORT_FIELD_NUMBER: _ClassVar[int]
    report: _recovery_pb2.MaintenanceReport
    def __init__(self, report: _Optional[_Union[_recovery_pb2.MaintenanceReport, _Mapping]] = ...) -> None: ...

class AcquireLeadershipRequest(_message.Message):
    __slots__ = ("name", "holder_id", "lease_seconds")
    NAME_FIELD_NUMBER: _ClassVar[int]
    HOLDER_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    name: str
    holder_id: str
    lease_seconds: int
    def __init__(self, name: _Optional[str] = ..., holder_id: _Optional[str] = ..., lease_seconds: _Optional[int] = ...) -> None: ...

class AcquireLeadershipResponse(_message.Message):
    __slots__ = ("leadership",)
    LEADERSHIP_FIELD_NUMBER: _ClassVar[int]
    leadership: Leadership
    def __init__(self, leadership: _Optional[_Union[Leadership, _Mapping]] = ...) -> None: ...

class ReleaseLeadershipRequest(_message.Message):
    __slots__ = ("name", "holder_id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    HOLDER_ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    holder_id: str
    def __init__(self, name: _Optional[str] = ..., holder_id: _Optional[str] = ...) -> None: ...

class ReleaseLeadershipResponse(_message.Message):
    __slots__ = ("leadership",)
    LEADERSHIP_FIELD_NUMBER: _ClassVar[int]
    leadership: Leadership
    def __init__(self, leadership: _Optional[_Union[Leadership, _Mapping]] = ...) -> None: ...

class GetMailDueRequest(_message.Message):
    __slots__ = ("coordinator_id",)
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    def __init__(self, coordinator_id: _Optional[str] = ...) -> None: ...

class GetMailDueResponse(_message.Message):
    __slots__ = ("owner", "owner_display_name", "org_slug", "display_name", "digest", "human_needed", "human_needed_through", "lane_titles")
    class LaneTitlesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    OWNER_FIELD_NUMBER: _ClassVar[int]
    OWNER_DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    ORG_SLUG_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    HUMAN_NEEDED_FIELD_NUMBER: _ClassVar[int]
    HUMAN_NEEDED_THROUGH_FIELD_NUMBER: _ClassVar[int]
    LANE_TITLES_FIELD_NUMBER: _ClassVar[int]
    owner: str
    owner_display_name: str
    org_slug: str
    display_name: str
    digest: _work_coordinator_pb2.Digest
    human_needed: _containers.RepeatedCompositeFieldContainer[_event_pb2.Event]
    human_needed_through: int
    lane_titles: _containers.ScalarMap[str, str]
    def __init__(self, owner: _Optional[str] = ..., owner_display_name: _Optional[str] = ..., org_slug: _Optional[str] = ..., display_name: _Optional[str] = ..., digest: _Optional[_Union[_work_coordinator_pb2.Digest, _Mapping]] = ..., human_needed: _Optional[_Iterable[_Union[_event_pb2.Event, _Mapping]]] = ..., human_needed_through: _Optional[int] = ..., lane_titles: _Optional[_Mapping[str, str]] = ...) -> None: ...

class MarkMailSentRequest(_message.Message):
    __slots__ = ("coordinator_id", "digest_day", "human_needed_revision", "mailed")
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    DIGEST_DAY_FIELD_NUMBER: _ClassVar[int]
    HUMAN_NEEDED_REVISION_FIELD_NUMBER: _ClassVar[int]
    MAILED_FIELD_NUMBER: _ClassVar[int]
    coordinator_id: str
    digest_day: str
    human_needed_revision: int
    mailed: bool
    def __init__(self, coordinator_id: _Optional[str] = ..., digest_day: _Optional[str] = ..., human_needed_revision: _Optional[int] = ..., mailed: _Optional[bool] = ...) -> None: ...

class MarkMailSentResponse(_message.Message):
    __slots__ = ("moved",)
    MOVED_FIELD_NUMBER: _ClassVar[int]
    moved: bool
    def __init__(self, moved: _Optional[bool] = ...) -> None: ...

class DeliverWebhooksRequest(_message.Message):
    __slots__ = ("wait_seconds", "public_url")
    WAIT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    PUBLIC_URL_FIELD_NUMBER: _ClassVar[int]
    wait_seconds: float
    public_url: str
    def __init__(self, wait_seconds: _Optional[float] = ..., public_url: _Optional[str] = ...) -> None: ...

class DeliverWebhooksResponse(_message.Message):
    __slots__ = ("tried",)
    TRIED_FIELD_NUMBER: _ClassVar[int]
    tried: int
    def __init__(self, tried: _Optional[int] = ...) -> None: ...
