"""The garbage collector of a long-running service process.

CPython's cycle collector walks every tracked object of the generation it collects, and its
oldest generation holds everything a service builds while it starts: modules, protobuf
descriptors, SQLAlchemy's metadata and compiled statements, gRPC and HTTP machinery — several
hundred thousand objects that live as long as the process. Each full collection walked them all:
120 to 190 ms with the event loop stopped, several times a minute under load, which was most of
the tail of a heartbeat's latency (bench/README.md, B8).

:func:`settle` runs once the service is up: it collects what start-up left behind and then
freezes the rest (``gc.freeze``), so later collections walk only what was made since. Young
objects are collected less often (:data:`YOUNG_THRESHOLD` allocations instead of 700): a busy
service allocates thousands of objects a call, and each young collection promotes the ones still
in use, which the older collections then walk again.
"""

from __future__ import annotations

import gc

__all__ = ["YOUNG_THRESHOLD", "settle"]

YOUNG_THRESHOLD = 10_000


def settle() -> None:
    """Collect what start-up left, freeze the survivors out of future collections, and raise the
    young generation's threshold (the older ones keep their defaults)."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
