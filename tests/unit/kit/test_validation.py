from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any

import pytest

from workcoord.api.v1 import admin_pb2
from workcoord.kit import validation
from workcoord.kit.errors import FieldViolation, InvalidArgument

NOW = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)


def _valid(kit_pb2: ModuleType) -> Any:
    request = kit_pb2.Request(
        worker_id="w1",
        lease_seconds=30,
        kind=kit_pb2.Request.TASK,
        files=["/srv/a.py"],
    )
    request.primary.worker_class = "machine"
    return request


def _by_field(violations: list[FieldViolation]) -> dict[str, str]:
    return {v.field: v.description for v in violations}


def test_valid_request_has_no_violations(kit_pb2: ModuleType) -> None:
    assert validation.validate(_valid(kit_pb2), NOW) == []
    validation.raise_if_invalid(_valid(kit_pb2), NOW)


def test_required(kit_pb2: ModuleType) -> None:
    found = _by_field(validation.validate(kit_pb2.Request(lease_seconds=5), NOW))
    assert found == {
        "worker_id": "is required",
        "kind": "is required",
        "primary": "is required",
        "files": "is required",
    }


def test_min_max(kit_pb2: ModuleType) -> None:
    request = _valid(kit_pb2)
    request.lease_seconds = 301
    request.weight = 1.5
    assert _by_field(validation.validate(request, NOW)) == {
        "lease_seconds": "must be between 5 and 300",
        "weight": "must be at most 1",
    }
    # A non-optional scalar's zero is a value like any other.
    request = _valid(kit_pb2)
    request.lease_seconds = 0
    assert _by_field(validation.validate(request, NOW)) == {
        "lease_seconds": "must be between 5 and 300"
    }


def test_optional_scalar_is_checked_only_when_set(kit_pb2: ModuleType) -> None:
    request = _valid(kit_pb2)
    assert validation.validate(request, NOW) == []
    request.max_items = 0
    assert _by_field(validation.validate(request, NOW)) == {
        "max_items": "must be between 1 and 100"
    }


def test_strings_length_pattern_and_default_cap(kit_pb2: ModuleType) -> None:
    request = _valid(kit_pb2)
    request.worker_id = "w" * 65
    request.note = "n" * 4097
    request.primary.worker_class = "Machine"
    assert _by_field(validation.validate(request, NOW)) == {
        "worker_id": "must be at most 64 characters",
        "note": "must be at most 4096 characters",
        "primary.worker_class": "must match [a-z][a-z0-9-]{0,31} (a lowercase class name)",
    }
    request = _valid(kit_pb2)
    request.note = "n" * 4096
    assert validation.validate(request, NOW) == []


def test_nul_is_refused_everywhere(kit_pb2: ModuleType) -> None:
    request = _valid(kit_pb2)
    request.note = "a\x00b"
    request.labels["k\x00"] = "v"
    assert _by_field(validation.validate(request, NOW)) == {
        "note": "must not contain NUL characters",
        "labels[k\x00]": "key must not contain NUL characters",
    }


def test_nested_and_repeated_paths(kit_pb2: ModuleType) -> None:
    request = _valid(kit_pb2)
    request.items.add(worker_class="ok")
    request.items.add(worker_class="ok")
    bad = request.items.add(worker_class="")
    bad.children.add(worker_class="BAD")
    request.by_key["x"].worker_class = ""
    assert _by_field(validation.validate(request, NOW)) == {
        "items[2].worker_class": "is required (a lowercase class name)",
        "items[2].children[0].worker_class": (
            "must match [a-z][a-z0-9-]{0,31} (a lowercase class name)"
        ),
        "by_key[x].worker_class": "is required (a lowercase class name)",
    }


def test_max_items_and_default_cap(kit_pb2: ModuleType) -> None:
    request = _valid(kit_pb2)
    for _ in range(4):
        request.items.add(worker_class="BAD")
    request.tags.extend(["t"] * 1001)
    request.files.extend(["/a", "/b"])
    assert _by_field(validation.validate(request, NOW)) == {
        "items": "must have at most 3 items",
        "tags": "must have at most 1000 items",
        "files": "must have at most 2 items",
    }


def test_maps(kit_pb2: ModuleType) -> None:
    request = _valid(kit_pb2)
    request.class_capacity["codex"] = 4
    request.class_capacity["Codex"] = 1
    request.class_capacity["person"] = 1001
    request.labels["env"] = "production"
    assert _by_field(validation.validate(request, NOW)) == {
        "class_capacity[Codex]": "key must match [a-z]+",
        "class_capacity[person]": "must be between 0 and 1000",
        "labels[env]": "must be at most 8 characters",
    }
    for name in ("a", "b", "c", "d", "e"):
        request.class_capacity[name] = 1
    assert _by_field(validation.validate(request, NOW))["class_capacity"] == (
        "must have at most 4 entries"
    )


def test_duration_bounds_in_seconds(kit_pb2: ModuleType) -> None:
    request = _valid(kit_pb2)
    request.timeout.FromTimedelta(timedelta(milliseconds=500))
    assert _by_field(validation.validate(request, NOW)) == {"timeout": "must be between 1s and 60s"}
    request.timeout.FromTimedelta(timedelta(seconds=60))
    assert validation.validate(request, NOW) == []
    request.timeout.seconds, request.timeout.nanos = 5, -1
    assert _by_field(validation.validate(request, NOW)) == {"timeout": "must be a valid duration"}


def test_timestamp_not_in_future(kit_pb2: ModuleType) -> None:
    request = _valid(kit_pb2)
    request.started_at.FromDatetime(NOW)
    assert validation.validate(request, NOW) == []
    request.started_at.FromDatetime(NOW + timedelta(seconds=1))
    assert _by_field(validation.validate(request, NOW)) == {
        "started_at": "must not be in the future"
    }
    request.started_at.seconds = 253_402_300_800
    assert _by_field(validation.validate(request, NOW)) == {
        "started_at": "must be a valid RFC 3339 time"
    }


def test_max_bytes(kit_pb2: ModuleType) -> None:
    request = _valid(kit_pb2)
    request.inputs.update({"k": "v"})
    request.blob = b"1234"
    assert validation.validate(request, NOW) == []
    request.inputs.update({"big": "x" * 100})
    request.blob = b"12345"
    request.extra.worker_class = "a" * 20
    assert _by_field(validation.validate(request, NOW)) == {
        "inputs": "must be at most 64 bytes when serialized",
        "blob": "must be at most 4 bytes",
        "extra": "must be at most 16 bytes when serialized",
    }


def test_absolute_path(kit_pb2: ModuleType) -> None:
    request = _valid(kit_pb2)
    request.worktree_path = "srv/lanes"
    request.files[0] = "../etc"
    assert _by_field(validation.validate(request, NOW)) == {
        "worktree_path": "must be an absolute path",
        "files[0]": "must be an absolute path",
    }


def test_enum_must_be_declared(kit_pb2: ModuleType) -> None:
    request = _valid(kit_pb2)
    request.kind = 7
    assert _by_field(validation.validate(request, NOW)) == {"kind": "must be one of TASK, REVIEW"}


def _work_key_request(*capabilities: int) -> admin_pb2.CreateWorkKeyRequest:
    key = admin_pb2.WorkKey(display_name="k", org_slug="acme", coordinator_ids=["wc_a"])
    # Numbers as a client may send them, declared or not.
    key.capabilities.extend(capabilities)  # type: ignore[arg-type]
    return admin_pb2.CreateWorkKeyRequest(work_key=key)


def test_a_repeated_enum_never_holds_its_unspecified_zero() -> None:
    # It reached the servicer, whose Capability(…) conversion answered 500.
    read = admin_pb2.WorkKey.READ
    assert validation.validate(_work_key_request(read), NOW) == []
    for capabilities, field in (
        ((admin_pb2.WorkKey.CAPABILITY_UNSPECIFIED,), "work_key.capabilities[0]"),
        ((read, 0), "work_key.capabilities[1]"),
        ((read, 7), "work_key.capabilities[1]"),
    ):
        assert _by_field(validation.validate(_work_key_request(*capabilities), NOW)) == {
            field: "must be one of READ, LEASE, WRITE"
        }


def test_wrapper_values(kit_pb2: ModuleType) -> None:
    request = _valid(kit_pb2)
    request.priority.value = 0
    assert validation.validate(request, NOW) == []
    request.priority.value = 10
    assert _by_field(validation.validate(request, NOW)) == {"priority": "must be between 0 and 9"}


def test_raise_if_invalid(kit_pb2: ModuleType) -> None:
    with pytest.raises(InvalidArgument) as raised:
        validation.raise_if_invalid(kit_pb2.Request(lease_seconds=5), NOW)
    assert {v.field for v in raised.value.field_violations} == {
        "worker_id",
        "kind",
        "primary",
        "files",
    }


def test_rules_for_and_caching(kit_pb2: ModuleType) -> None:
    fields = kit_pb2.Request.DESCRIPTOR.fields_by_name
    rules = validation.rules_for(fields["lease_seconds"])
    assert rules is not None and (rules.min, rules.max, rules.has_min) == (5, 300, True)
    assert validation.rules_for(fields["note"]) is None
    validation.prepare(kit_pb2.Request.DESCRIPTOR)
    before = validation._plan.cache_info()
    validation.validate(_valid(kit_pb2), NOW)
    after = validation._plan.cache_info()
    assert after.misses == before.misses
    assert after.hits > before.hits


def test_bad_pattern_fails_at_prepare(kit_pb2: ModuleType) -> None:
    with pytest.raises(ValueError, match=r"kittest\.v1\.BadPattern\.name"):
        validation.prepare(kit_pb2.BadPattern.DESCRIPTOR)
