"""``workcoord config set|get|list|use|delete``: saved connection profiles
(:mod:`workcoord.cli.profiles`), as ``temporal env`` keeps environments."""

from __future__ import annotations

import argparse
import json

from workcoord.cli import profiles
from workcoord.cli.common import EXIT_OK, EXIT_USAGE, CliError, add_command_group

__all__ = ["register"]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``config set|get|list|use|delete``."""
    sub = add_command_group(
        commands,
        "config_command",
        "config",
        help="saved profiles: address, token file, output (in $XDG_CONFIG_HOME/workcoord)",
    )
    set_ = sub.add_parser("set", help="create a profile or change some of its values")
    set_.add_argument("name", metavar="PROFILE")
    set_.add_argument("--address", help="coordinator gRPC address")
    set_.add_argument("--token-file", help="a file holding the token (the token is not stored)")
    set_.add_argument("--output", choices=("json", "table"), help="the default of -o")
    set_.set_defaults(handler=_set)

    get = sub.add_parser("get", help="show a profile (or one of its values)")
    get.add_argument("name", metavar="PROFILE")
    get.add_argument("key", nargs="?", choices=profiles.KEYS, metavar="KEY")
    get.set_defaults(handler=_get)

    list_ = sub.add_parser("list", help="the profiles; * marks the current one")
    list_.set_defaults(handler=_list)

    use = sub.add_parser("use", help="make a profile the current one")
    use.add_argument("name", metavar="PROFILE")
    use.set_defaults(handler=_use)

    delete = sub.add_parser("delete", help="delete a profile")
    delete.add_argument("name", metavar="PROFILE")
    delete.set_defaults(handler=_delete)


def _load() -> profiles.Config:
    try:
        return profiles.load()
    except profiles.ProfileError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None


def _known(config: profiles.Config, name: str) -> dict[str, str]:
    if name not in config.profiles:
        raise CliError(f"no profile {name!r}; see 'workcoord config list'", EXIT_USAGE)
    return config.profiles[name]


def _set(args: argparse.Namespace) -> int:
    config = _load()
    given = {key: getattr(args, key) for key in profiles.KEYS if getattr(args, key) is not None}
    if not given:
        raise CliError("config set: give --address, --token-file and/or --output", EXIT_USAGE)
    try:
        profiles.check_name(args.name)
        values = {key: profiles.check_value(key, value) for key, value in given.items()}
    except profiles.ProfileError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    config.profiles.setdefault(args.name, {}).update(values)
    if not config.current:
        config.current = args.name  # the first profile is the one in use
    profiles.save(config)
    return EXIT_OK


def _get(args: argparse.Namespace) -> int:
    values = _known(_load(), args.name)
    if args.key:
        if args.key not in values:
            raise CliError(f"profile {args.name!r} sets no {args.key}", EXIT_USAGE)
        print(values[args.key])
    else:
        print(json.dumps(values, indent=2, sort_keys=True))
    return EXIT_OK


def _list(args: argparse.Namespace) -> int:
    config = _load()
    for name in sorted(config.profiles):
        print(f"{'*' if name == config.current else ' '} {name}")
    return EXIT_OK


def _use(args: argparse.Namespace) -> int:
    config = _load()
    _known(config, args.name)
    config.current = args.name
    profiles.save(config)
    return EXIT_OK


def _delete(args: argparse.Namespace) -> int:
    config = _load()
    _known(config, args.name)
    del config.profiles[args.name]
    if config.current == args.name:
        config.current = ""
    profiles.save(config)
    return EXIT_OK
