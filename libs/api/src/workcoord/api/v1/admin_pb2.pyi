import datetime

from google.api import annotations_pb2 as _annotations_pb2
from google.api import field_behavior_pb2 as _field_behavior_pb2
from google.protobuf import field_mask_pb2 as _field_mask_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from workcoord.api.v1 import field_rules_pb2 as _field_rules_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Principal(_message.Message):
    __slots__ = ("kind", "name", "id", "display_name", "platform_admin", "memberships", "capabilities", "coordinator_ids")
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        KIND_UNSPECIFIED: _ClassVar[Principal.Kind]
        USER: _ClassVar[Principal.Kind]
        WORK_KEY: _ClassVar[Principal.Kind]
        SERVICE: _ClassVar[Principal.Kind]
    KIND_UNSPECIFIED: Principal.Kind
    USER: Principal.Kind
    WORK_KEY: Principal.Kind
    SERVICE: Principal.Kind
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    PLATFORM_ADMIN_FIELD_NUMBER: _ClassVar[int]
    MEMBERSHIPS_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    COORDINATOR_IDS_FIELD_NUMBER: _ClassVar[int]
    kind: Principal.Kind
    name: str
    id: str
    display_name: str
    platform_admin: bool
    memberships: _containers.RepeatedCompositeFieldContainer[OrgMember]
    capabilities: _containers.RepeatedScalarFieldContainer[WorkKey.Capability]
    coordinator_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, kind: _Optional[_Union[Principal.Kind, str]] = ..., name: _Optional[str] = ..., id: _Optional[str] = ..., display_name: _Optional[str] = ..., platform_admin: _Optional[bool] = ..., memberships: _Optional[_Iterable[_Union[OrgMember, _Mapping]]] = ..., capabilities: _Optional[_Iterable[_Union[WorkKey.Capability, str]]] = ..., coordinator_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class Org(_message.Message):
    __slots__ = ("slug", "display_name", "create_time")
    SLUG_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    slug: str
    display_name: str
    create_time: _timestamp_pb2.Timestamp
    def __init__(self, slug: _Optional[str] = ..., display_name: _Optional[str] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class User(_message.Message):
    __slots__ = ("user_id", "email", "display_name", "platform_admin", "verified", "create_time")
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    EMAIL_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    PLATFORM_ADMIN_FIELD_NUMBER: _ClassVar[int]
    VERIFIED_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    user_id: str
    email: str
    display_name: str
    platform_admin: bool
    verified: bool
    create_time: _timestamp_pb2.Timestamp
    def __init__(self, user_id: _Optional[str] = ..., email: _Optional[str] = ..., display_name: _Optional[str] = ..., platform_admin: _Optional[bool] = ..., verified: _Optional[bool] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class OrgMember(_message.Message):
    __slots__ = ("user_id", "org_slug", "role", "create_time")
    class Role(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        ROLE_UNSPECIFIED: _ClassVar[OrgMember.Role]
        ORG_ADMIN: _ClassVar[OrgMember.Role]
        ORG_VIEWER: _ClassVar[OrgMember.Role]
    ROLE_UNSPECIFIED: OrgMember.Role
    ORG_ADMIN: OrgMember.Role
    ORG_VIEWER: OrgMember.Role
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    ORG_SLUG_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    user_id: str
    org_slug: str
    role: OrgMember.Role
    create_time: _timestamp_pb2.Timestamp
    def __init__(self, user_id: _Optional[str] = ..., org_slug: _Optional[str] = ..., role: _Optional[_Union[OrgMember.Role, str]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class UserToken(_message.Message):
    __slots__ = ("token_id", "user_id", "display_name", "expire_time", "revoke_time", "create_time")
    TOKEN_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    REVOKE_TIME_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    token_id: str
    user_id: str
    display_name: str
    expire_time: _timestamp_pb2.Timestamp
    revoke_time: _timestamp_pb2.Timestamp
    create_time: _timestamp_pb2.Timestamp
    def __init__(self, token_id: _Optional[str] = ..., user_id: _Optional[str] = ..., display_name: _Optional[str] = ..., expire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., revoke_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class WorkKey(_message.Message):
    __slots__ = ("key_id", "display_name", "org_slug", "coordinator_ids", "capabilities", "expire_time", "revoke_time", "create_time", "created_by")
    class Capability(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        CAPABILITY_UNSPECIFIED: _ClassVar[WorkKey.Capability]
        READ: _ClassVar[WorkKey.Capability]
        LEASE: _ClassVar[WorkKey.Capability]
        WRITE: _ClassVar[WorkKey.Capability]
    CAPABILITY_UNSPECIFIED: WorkKey.Capability
    READ: WorkKey.Capability
    LEASE: WorkKey.Capability
    WRITE: WorkKey.Capability
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    ORG_SLUG_FIELD_NUMBER: _ClassVar[int]
    COORDINATOR_IDS_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    REVOKE_TIME_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    CREATED_BY_FIELD_NUMBER: _ClassVar[int]
    key_id: str
    display_name: str
    org_slug: str
    coordinator_ids: _containers.RepeatedScalarFieldContainer[str]
    capabilities: _containers.RepeatedScalarFieldContainer[WorkKey.Capability]
    expire_time: _timestamp_pb2.Timestamp
    revoke_time: _timestamp_pb2.Timestamp
    create_time: _timestamp_pb2.Timestamp
    created_by: str
    def __init__(self, key_id: _Optional[str] = ..., display_name: _Optional[str] = ..., org_slug: _Optional[str] = ..., coordinator_ids: _Optional[_Iterable[str]] = ..., capabilities: _Optional[_Iterable[_Union[WorkKey.Capability, str]]] = ..., expire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., revoke_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., created_by: _Optional[str] = ...) -> None: ...

class Settings(_message.Message):
    __slots__ = ("work_coordinator_enabled", "update_time", "etag")
    WORK_COORDINATOR_ENABLED_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    ETAG_FIELD_NUMBER: _ClassVar[int]
    work_coordinator_enabled: bool
    update_time: _timestamp_pb2.Timestamp
    etag: str
    def __init__(self, work_coordinator_enabled: _Optional[bool] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., etag: _Optional[str] = ...) -> None: ...

class GetCurrentPrincipalRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetCurrentPrincipalResponse(_message.Message):
    __slots__ = ("principal",)
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    principal: Principal
    def __init__(self, principal: _Optional[_Union[Principal, _Mapping]] = ...) -> None: ...

class CreateOrgRequest(_message.Message):
    __slots__ = ("org",)
    ORG_FIELD_NUMBER: _ClassVar[int]
    org: Org
    def __init__(self, org: _Optional[_Union[Org, _Mapping]] = ...) -> None: ...

class CreateOrgResponse(_message.Message):
    __slots__ = ("org",)
    ORG_FIELD_NUMBER: _ClassVar[int]
    org: Org
    def __init__(self, org: _Optional[_Union[Org, _Mapping]] = ...) -> None: ...

class ListOrgsRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListOrgsResponse(_message.Message):
    __slots__ = ("orgs", "next_page_token")
    ORGS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    orgs: _containers.RepeatedCompositeFieldContainer[Org]
    next_page_token: str
    def __init__(self, orgs: _Optional[_Iterable[_Union[Org, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetOrgRequest(_message.Message):
    __slots__ = ("org_slug",)
    ORG_SLUG_FIELD_NUMBER: _ClassVar[int]
    org_slug: str
    def __init__(self, org_slug: _Optional[str] = ...) -> None: ...

class GetOrgResponse(_message.Message):
    __slots__ = ("org",)
    ORG_FIELD_NUMBER: _ClassVar[int]
    org: Org
    def __init__(self, org: _Optional[_Union[Org, _Mapping]] = ...) -> None: ...

class CreateUserRequest(_message.Message):
    __slots__ = ("user",)
    USER_FIELD_NUMBER: _ClassVar[int]
    user: User
    def __init__(self, user: _Optional[_Union[User, _Mapping]] = ...) -> None: ...

class CreateUserResponse(_message.Message):
    __slots__ = ("user",)
    USER_FIELD_NUMBER: _ClassVar[int]
    user: User
    def __init__(self, user: _Optional[_Union[User, _Mapping]] = ...) -> None: ...

class ListUsersRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListUsersResponse(_message.Message):
    __slots__ = ("users", "next_page_token")
    USERS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    users: _containers.RepeatedCompositeFieldContainer[User]
    next_page_token: str
    def __init__(self, users: _Optional[_Iterable[_Union[User, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetUserRequest(_message.Message):
    __slots__ = ("user_id",)
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    user_id: str
    def __init__(self, user_id: _Optional[str] = ...) -> None: ...

class GetUserResponse(_message.Message):
    __slots__ = ("user",)
    USER_FIELD_NUMBER: _ClassVar[int]
    user: User
    def __init__(self, user: _Optional[_Union[User, _Mapping]] = ...) -> None: ...

class AddOrgMemberRequest(_message.Message):
    __slots__ = ("org_slug", "member")
    ORG_SLUG_FIELD_NUMBER: _ClassVar[int]
    MEMBER_FIELD_NUMBER: _ClassVar[int]
    org_slug: str
    member: OrgMember
    def __init__(self, org_slug: _Optional[str] = ..., member: _Optional[_Union[OrgMember, _Mapping]] = ...) -> None: ...

class AddOrgMemberResponse(_message.Message):
    __slots__ = ("member",)
    MEMBER_FIELD_NUMBER: _ClassVar[int]
    member: OrgMember
    def __init__(self, member: _Optional[_Union[OrgMember, _Mapping]] = ...) -> None: ...

class ListOrgMembersRequest(_message.Message):
    __slots__ = ("org_slug", "page_size", "page_token")
    ORG_SLUG_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    org_slug: str
    page_size: int
    page_token: str
    def __init__(self, org_slug: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListOrgMembersResponse(_message.Message):
    __slots__ = ("members", "next_page_token")
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    members: _containers.RepeatedCompositeFieldContainer[OrgMember]
    next_page_token: str
    def __init__(self, members: _Optional[_Iterable[_Union[OrgMember, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class RemoveOrgMemberRequest(_message.Message):
    __slots__ = ("org_slug", "user_id")
    ORG_SLUG_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    org_slug: str
    user_id: str
    def __init__(self, org_slug: _Optional[str] = ..., user_id: _Optional[str] = ...) -> None: ...

class RemoveOrgMemberResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CreateUserTokenRequest(_message.Message):
    __slots__ = ("user_id", "token")
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    user_id: str
    token: UserToken
    def __init__(self, user_id: _Optional[str] = ..., token: _Optional[_Union[UserToken, _Mapping]] = ...) -> None: ...

class CreateUserTokenResponse(_message.Message):
    __slots__ = ("token_id", "secret", "token")
    TOKEN_ID_FIELD_NUMBER: _ClassVar[int]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    token_id: str
    secret: str
    token: UserToken
    def __init__(self, token_id: _Optional[str] = ..., secret: _Optional[str] = ..., token: _Optional[_Union[UserToken, _Mapping]] = ...) -> None: ...

class RevokeUserTokenRequest(_message.Message):
    __slots__ = ("user_id", "token_id")
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    TOKEN_ID_FIELD_NUMBER: _ClassVar[int]
    user_id: str
    token_id: str
    def __init__(self, user_id: _Optional[str] = ..., token_id: _Optional[str] = ...) -> None: ...

class RevokeUserTokenResponse(_message.Message):
    __slots__ = ("token",)
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    token: UserToken
    def __init__(self, token: _Optional[_Union[UserToken, _Mapping]] = ...) -> None: ...

class CreateWorkKeyRequest(_message.Message):
    __slots__ = ("work_key",)
    WORK_KEY_FIELD_NUMBER: _ClassVar[int]
    work_key: WorkKey
    def __init__(self, work_key: _Optional[_Union[WorkKey, _Mapping]] = ...) -> None: ...

class CreateWorkKeyResponse(_message.Message):
    __slots__ = ("key_id", "secret", "work_key")
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    WORK_KEY_FIELD_NUMBER: _ClassVar[int]
    key_id: str
    secret: str
    work_key: WorkKey
    def __init__(self, key_id: _Optional[str] = ..., secret: _Optional[str] = ..., work_key: _Optional[_Union[WorkKey, _Mapping]] = ...) -> None: ...

class ListWorkKeysRequest(_message.Message):
    __slots__ = ("org_slug", "page_size", "page_token")
    ORG_SLUG_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    org_slug: str
    page_size: int
    page_token: str
    def __init__(self, org_slug: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListWorkKeysResponse(_message.Message):
    __slots__ = ("work_keys", "next_page_token")
    WORK_KEYS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    work_keys: _containers.RepeatedCompositeFieldContainer[WorkKey]
    next_page_token: str
    def __init__(self, work_keys: _Optional[_Iterable[_Union[WorkKey, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetWorkKeyRequest(_message.Message):
    __slots__ = ("key_id",)
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    key_id: str
    def __init__(self, key_id: _Optional[str] = ...) -> None: ...

class GetWorkKeyResponse(_message.Message):
    __slots__ = ("work_key",)
    WORK_KEY_FIELD_NUMBER: _ClassVar[int]
    work_key: WorkKey
    def __init__(self, work_key: _Optional[_Union[WorkKey, _Mapping]] = ...) -> None: ...

class RevokeWorkKeyRequest(_message.Message):
    __slots__ = ("key_id",)
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    key_id: str
    def __init__(self, key_id: _Optional[str] = ...) -> None: ...

class RevokeWorkKeyResponse(_message.Message):
    __slots__ = ("work_key",)
    WORK_KEY_FIELD_NUMBER: _ClassVar[int]
    work_key: WorkKey
    def __init__(self, work_key: _Optional[_Union[WorkKey, _Mapping]] = ...) -> None: ...

class GetSettingsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetSettingsResponse(_message.Message):
    __slots__ = ("settings",)
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    settings: Settings
    def __init__(self, settings: _Optional[_Union[Settings, _Mapping]] = ...) -> None: ...

class UpdateSettingsRequest(_message.Message):
    __slots__ = ("settings", "update_mask")
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    UPDATE_MASK_FIELD_NUMBER: _ClassVar[int]
    settings: Settings
    update_mask: _field_mask_pb2.FieldMask
    def __init__(self, settings: _Optional[_Union[Settings, _Mapping]] = ..., update_mask: _Optional[_Union[_field_mask_pb2.FieldMask, _Mapping]] = ...) -> None: ...

class UpdateSettingsResponse(_message.Message):
    __slots__ = ("settings",)
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    settings: Settings
    def __init__(self, settings: _Optional[_Union[Settings, _Mapping]] = ...) -> None: ...
