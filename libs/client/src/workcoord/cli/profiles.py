"""Saved connection profiles: ``$XDG_CONFIG_HOME/workcoord/config.toml`` (mode 0600).

A profile names an address, a token file and an output format. The one in use is
``--profile NAME``, else ``WORKCOORD_PROFILE``, else the file's ``current``; its values are only
defaults: a flag or an environment variable (``WORKCOORD_ADDRESS``, ``WORKCOORD_TOKEN``,
``WORKCOORD_OUTPUT``) still wins. The token itself is never stored, only the path of a file
holding it, read when a command connects.

The file::

    current = "prod"

    [profiles.prod]
    address = "coordinator.example.com:443"
    token_file = "/home/ada/.config/workcoord/prod-token"
    output = "table"
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "KEYS",
    "PROFILE_ENV",
    "Config",
    "ProfileError",
    "active",
    "config_path",
    "load",
    "save",
    "select",
]

PROFILE_ENV = "WORKCOORD_PROFILE"
# Each key a profile may set; the output formats as for ``-o``.
KEYS = ("address", "token_file", "output")
_OUTPUTS = ("json", "table")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}\Z")


class ProfileError(Exception):
    """A malformed config file, an unknown profile or a bad value (a usage error)."""


@dataclass
class Config:
    """The whole file: the profile in use by default and every profile's values."""

    current: str = ""
    profiles: dict[str, dict[str, str]] = field(default_factory=dict)


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/workcoord/config.toml`` (``~/.config`` when unset or relative, as the
    XDG spec says)."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CONFIG_HOME", "")
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".config"
    return root / "workcoord" / "config.toml"


def check_name(name: str) -> str:
    """``name`` if it is a valid profile name, else ProfileError."""
    if not _NAME.match(name):
        raise ProfileError(
            f"profile name {name!r}: letters, digits, '_' and '-', at most 64, starting with a "
            "letter or digit"
        )
    return name


def check_value(key: str, value: str) -> str:
    """``value`` for ``key`` if allowed, else ProfileError."""
    if key not in KEYS:
        raise ProfileError(f"unknown key {key!r}: one of {', '.join(KEYS)}")
    if key == "output" and value not in _OUTPUTS:
        raise ProfileError(f"output: one of {', '.join(_OUTPUTS)}, got {value!r}")
    if not value or any(ord(c) < 0x20 for c in value):
        raise ProfileError(f"{key}: must be non-empty text without control characters")
    return value


def load(path: Path | None = None) -> Config:
    """The config at ``path`` (default :func:`config_path`); an empty one if there is none."""
    path = path or config_path()
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return Config()
    except OSError as exc:
        raise ProfileError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        document: dict[str, Any] = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ProfileError(f"{path}: not TOML: {exc}") from None
    current = document.get("current", "")
    profiles = document.get("profiles", {})
    if not isinstance(current, str) or not isinstance(profiles, dict):
        raise ProfileError(f"{path}: 'current' must be a string and 'profiles' a table")
    config = Config(current=current)
    for name, values in profiles.items():
        if not isinstance(values, dict):
            raise ProfileError(f"{path}: profiles.{name} must be a table")
        config.profiles[check_name(name)] = {
            key: check_value(key, str(value)) for key, value in values.items()
        }
    return config


def save(config: Config, path: Path | None = None) -> Path:
    """Write ``config`` to ``path`` atomically, readable by its owner only (0600, in a 0700
    folder): it names where the credentials are."""
    path = path or config_path()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    lines = [f"current = {_toml_string(config.current)}"] if config.current else []
    for name in sorted(config.profiles):
        lines += ["", f"[profiles.{check_name(name)}]"]
        for key in KEYS:
            if key in config.profiles[name]:
                lines.append(f"{key} = {_toml_string(config.profiles[name][key])}")
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".config.", suffix=".toml")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write("\n".join(lines) + "\n")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def _toml_string(text: str) -> str:
    # A JSON string (ASCII, \uXXXX escapes) is a valid TOML basic string.
    return json.dumps(text, ensure_ascii=True)


# The profile in use by this process, chosen once by ``main`` before the parser is built (the
# flags' defaults come from it).
_active: dict[str, str] = {}


def select(name: str | None, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Choose the profile for this process: ``name`` (``--profile``), else
    ``WORKCOORD_PROFILE``, else the file's ``current`` (none at all is fine). Returns its
    values; a profile asked for by name that does not exist is an error."""
    env = os.environ if environ is None else environ
    config = load(config_path(env))
    wanted = name or env.get(PROFILE_ENV) or ""
    chosen = wanted or config.current
    _active.clear()
    if not chosen:
        return {}
    if chosen not in config.profiles:
        where = "--profile" if name else (PROFILE_ENV if wanted else "current in the config")
        raise ProfileError(f"no profile {chosen!r} ({where}); see 'workcoord config list'")
    _active.update(config.profiles[chosen])
    return dict(_active)


def active(key: str) -> str:
    """A value of the profile in use (``""`` if none is, or it does not set ``key``)."""
    return _active.get(key, "")


def profile_token() -> str | None:
    """The token from the profile's ``token_file`` (None without one)."""
    token_file = active("token_file")
    if not token_file:
        return None
    path = Path(token_file).expanduser()
    try:
        token = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ProfileError(f"token_file {path}: {exc.strerror or exc}") from None
    return token or None
