"""The ``main`` of a service's own command (``workcoord serve <name>``): settings from the
environment, logging, the metrics server, then the service until it stops.

Exit codes: 0 once it stopped cleanly, 2 when the settings are bad, 1 when it could not start
(:class:`~workcoord.kit.startup.StartupError`, said in one line).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, TypeVar

from workcoord.kit.logging import configure_logging
from workcoord.kit.metrics import start_metrics_server
from workcoord.kit.settings import CommonSettings, SettingsError, load
from workcoord.kit.startup import StartupError

__all__ = ["serve_main"]

_S = TypeVar("_S", bound=CommonSettings)


def serve_main(
    name: str,
    settings_type: type[_S],
    required: Iterable[str],
    serve: Callable[[_S], Coroutine[Any, Any, None]],
) -> int:
    """Load ``settings_type`` (``required`` fields must be set), then run ``serve`` with them
    after starting logging and the metrics server; the exit code."""
    try:
        settings = load(settings_type, required=required)
    except SettingsError as exc:
        return _refused(name, exc, 2)
    configure_logging(settings.log_level, json=settings.log_json)
    try:
        start_metrics_server(getattr(settings, "metrics_port", None), what=f"{name} metrics")
        asyncio.run(serve(settings))
    except SettingsError as exc:
        return _refused(name, exc, 2)
    except StartupError as exc:
        return _refused(name, exc, 1)
    return 0


def _refused(name: str, exc: Exception, code: int) -> int:
    print(f"workcoord serve {name}: {exc}", file=sys.stderr)
    return code
