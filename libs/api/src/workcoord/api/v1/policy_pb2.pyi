import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from workcoord.api.v1 import field_rules_pb2 as _field_rules_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RetryPolicy(_message.Message):
    __slots__ = ("initial_interval", "backoff_coefficient", "maximum_interval", "maximum_attempts")
    INITIAL_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    BACKOFF_COEFFICIENT_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    initial_interval: _duration_pb2.Duration
    backoff_coefficient: float
    maximum_interval: _duration_pb2.Duration
    maximum_attempts: int
    def __init__(self, initial_interval: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., backoff_coefficient: _Optional[float] = ..., maximum_interval: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., maximum_attempts: _Optional[int] = ...) -> None: ...

class ReviewPolicy(_message.Message):
    __slots__ = ("max_fail_rounds", "on_pass", "ship_requires_approval")
    class OnPass(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        ON_PASS_UNSPECIFIED: _ClassVar[ReviewPolicy.OnPass]
        SHIP: _ClassVar[ReviewPolicy.OnPass]
        INTEGRATE_THEN_SHIP: _ClassVar[ReviewPolicy.OnPass]
        NONE: _ClassVar[ReviewPolicy.OnPass]
    ON_PASS_UNSPECIFIED: ReviewPolicy.OnPass
    SHIP: ReviewPolicy.OnPass
    INTEGRATE_THEN_SHIP: ReviewPolicy.OnPass
    NONE: ReviewPolicy.OnPass
    MAX_FAIL_ROUNDS_FIELD_NUMBER: _ClassVar[int]
    ON_PASS_FIELD_NUMBER: _ClassVar[int]
    SHIP_REQUIRES_APPROVAL_FIELD_NUMBER: _ClassVar[int]
    max_fail_rounds: int
    on_pass: ReviewPolicy.OnPass
    ship_requires_approval: bool
    def __init__(self, max_fail_rounds: _Optional[int] = ..., on_pass: _Optional[_Union[ReviewPolicy.OnPass, str]] = ..., ship_requires_approval: _Optional[bool] = ...) -> None: ...

class ActionPolicy(_message.Message):
    __slots__ = ("allowed_action_classes",)
    ALLOWED_ACTION_CLASSES_FIELD_NUMBER: _ClassVar[int]
    allowed_action_classes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, allowed_action_classes: _Optional[_Iterable[str]] = ...) -> None: ...

class Placement(_message.Message):
    __slots__ = ("require_labels", "worker_id", "exclusive")
    class RequireLabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    REQUIRE_LABELS_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    EXCLUSIVE_FIELD_NUMBER: _ClassVar[int]
    require_labels: _containers.ScalarMap[str, str]
    worker_id: str
    exclusive: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, require_labels: _Optional[_Mapping[str, str]] = ..., worker_id: _Optional[str] = ..., exclusive: _Optional[_Iterable[str]] = ...) -> None: ...
