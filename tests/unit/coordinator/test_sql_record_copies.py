"""The SQL store's record copies (``storage.sql._base.copied``): what ``copy.copy`` gives, for
the records it holds back and for any other class."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from tests.contract.records import attempt, item
from workcoord.coordinator.domain.model import ItemState
from workcoord.coordinator.storage.sql._base import copied


def test_a_copy_of_an_item_or_attempt_is_equal_and_its_own() -> None:
    original = replace(item("it_a", "ln_a"), inputs={"k": [1, 2]})
    twin = copied(original)
    assert twin == original and twin is not original
    assert twin.inputs is original.inputs  # shallow, as copy.copy
    twin.state = ItemState.LEASED
    assert original.state == ItemState.QUEUED
    lease = attempt("ls_a", original)
    assert copied(lease) == lease and copied(lease) is not lease


@dataclass
class _Derived:
    a: int
    b: list[int] = field(default_factory=list)
    n: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.n += 1


@dataclass(slots=True)
class _Single:
    a: int


def test_classes_the_fast_path_cannot_rebuild_are_copied_as_copy_copy_does() -> None:
    derived = _Derived(1, [2])
    derived.n = 7  # not from __init__: a rebuild would lose it
    twin = copied(derived)
    assert (twin.a, twin.b, twin.n) == (1, [2], 7) and twin is not derived
    assert copied(_Single(3)) == _Single(3)
