"""Running services from the command line: waiting for SIGINT/SIGTERM, settings errors."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from typing import TypeVar

from workcoord.cli.common import EXIT_USAGE, CliError
from workcoord.kit.settings import CommonSettings, SettingsError, load

__all__ = ["load_settings", "wait_for_signal"]

_S = TypeVar("_S", bound=CommonSettings)


async def wait_for_signal(stop: asyncio.Event | None = None) -> None:
    """Return on SIGINT or SIGTERM (or once ``stop`` is set, for tests)."""
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        # Not available off the main thread or on Windows; Ctrl-C still raises there.
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, stop.set)
            installed.append(signum)
    try:
        await stop.wait()
    finally:
        for signum in installed:
            loop.remove_signal_handler(signum)


def load_settings(command: str, cls: type[_S], *, required: tuple[str, ...] = ()) -> _S:
    """``cls`` from the environment; a :class:`CliError` (exit 2) naming every bad variable."""
    try:
        return load(cls, required=required)
    except SettingsError as exc:
        raise CliError(f"{command}: {exc}", EXIT_USAGE) from None
