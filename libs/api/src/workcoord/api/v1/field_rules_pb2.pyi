from google.protobuf import descriptor_pb2 as _descriptor_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor
RULES_FIELD_NUMBER: _ClassVar[int]
rules: _descriptor.FieldDescriptor

class FieldRules(_message.Message):
    __slots__ = ("required", "min", "max", "has_min", "has_max", "max_length", "pattern", "max_items", "max_bytes", "absolute_path", "not_in_future", "description", "not_credential", "min_nonzero_millis")
    REQUIRED_FIELD_NUMBER: _ClassVar[int]
    MIN_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    HAS_MIN_FIELD_NUMBER: _ClassVar[int]
    HAS_MAX_FIELD_NUMBER: _ClassVar[int]
    MAX_LENGTH_FIELD_NUMBER: _ClassVar[int]
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    MAX_ITEMS_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    ABSOLUTE_PATH_FIELD_NUMBER: _ClassVar[int]
    NOT_IN_FUTURE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    NOT_CREDENTIAL_FIELD_NUMBER: _ClassVar[int]
    MIN_NONZERO_MILLIS_FIELD_NUMBER: _ClassVar[int]
    required: bool
    min: int
    max: int
    has_min: bool
    has_max: bool
    max_length: int
    pattern: str
    max_items: int
    max_bytes: int
    absolute_path: bool
    not_in_future: bool
    description: str
    not_credential: bool
    min_nonzero_millis: int
    def __init__(self, required: _Optional[bool] = ..., min: _Optional[int] = ..., max: _Optional[int] = ..., has_min: _Optional[bool] = ..., has_max: _Optional[bool] = ..., max_length: _Optional[int] = ..., pattern: _Optional[str] = ..., max_items: _Optional[int] = ..., max_bytes: _Optional[int] = ..., absolute_path: _Optional[bool] = ..., not_in_future: _Optional[bool] = ..., description: _Optional[str] = ..., not_credential: _Optional[bool] = ..., min_nonzero_millis: _Optional[int] = ...) -> None: ...
