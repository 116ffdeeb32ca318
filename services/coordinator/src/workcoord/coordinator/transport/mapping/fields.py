"""Fields copied by name between domain records and messages, from explicit lists only.

Nothing is copied by introspection: a field goes out only if the :class:`ToPb` of its message
names it, so a private field (inputs, a token, a checkpoint, a secret hash) leaves only by being
written into one. Fields that are converted otherwise are passed by the caller.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Generic, TypeVar

from google.protobuf.message import Message

from .scalars import set_time

_M = TypeVar("_M", bound=Message)


def copied(source: object, names: tuple[str, ...]) -> dict[str, Any]:
    """``{name: source.name}`` for each of ``names``: keyword arguments for a message or a
    record whose fields have the same names."""
    return {name: getattr(source, name) for name in names}


def _enum_value(value: Enum | None) -> Any:
    return None if value is None else value.value


@dataclass(frozen=True, slots=True)
class ToPb(Generic[_M]):
    """How ``message`` takes the same-named fields of a record: ``plain`` as they are, ``enums``
    by their value (unset when None), ``times`` as timestamps (unset when None)."""

    message: type[_M]
    plain: tuple[str, ...] = ()
    enums: tuple[str, ...] = ()
    times: tuple[str, ...] = ()

    def __call__(self, record: object, **converted: Any) -> _M:
        """The message of ``record``'s named fields and the ``converted`` ones."""
        fields = copied(record, self.plain)
        for name in self.enums:
            fields[name] = _enum_value(getattr(record, name))
        out = self.message(**fields, **converted)
        for name in self.times:
            set_time(out, name, getattr(record, name))
        return out
