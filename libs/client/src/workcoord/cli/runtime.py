"""Running services from the command line: waiting for SIGINT/SIGTERM, settings errors."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Iterator
from typing import TypeVar

from workcoord.cli.common import EXIT_USAGE, CliError
from workcoord.kit.settings import CommonSettings, SettingsError, load

__all__ = ["load_settings", "stop_on_signals"]

_S = TypeVar("_S", bound=CommonSettings)


@contextlib.contextmanager
def stop_on_signals(stop: asyncio.Event | None = None) -> Iterator[asyncio.Event]:
    """An event set on SIGINT or SIGTERM (or by whoever holds ``stop``, for tests), with the
    handlers installed for the ``with`` block. Enter it before announcing readiness: a Ctrl-C
    that follows the announcement at once then stops cleanly instead of interrupting."""
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        # Not available off the main thread or on Windows; Ctrl-C still raises there.
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, stop.set)
            installed.append(signum)
    try:
        yield stop
    finally:
        for signum in installed:
            loop.remove_signal_handler(signum)


def load_settings(command: str, cls: type[_S], *, required: tuple[str, ...] = ()) -> _S:
    """``cls`` from the environment; a :class:`CliError` (exit 2) naming every bad variable."""
    try:
        return load(cls, required=required)
    except SettingsError as exc:
        raise CliError(f"{command}: {exc}", EXIT_USAGE) from None
