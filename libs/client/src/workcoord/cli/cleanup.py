"""``workcoord worker cleanup --manifest FILE``: remove exactly what a run's manifest owns.

The manifest is a JSON object ``{"paths": ["/abs/path", …]}``: the files and directories a run
made and owns (at most :data:`MAX_PATHS`). Cleanup removes those paths and nothing else, and
only when every one of them may go:

- each is an absolute path without ``..`` segments or NUL, lying strictly inside one of the
  trusted repository roots (``WORKCOORD_WORKER_REPOSITORY_ROOTS``; a root itself never goes),
  once every directory on the way to it is resolved, so a symlinked parent cannot lead out of
  the roots (one that stays inside them is followed: the resolved path is what goes);
- the path itself is never followed: a symlink is removed as a link, and a directory's tree is
  removed without following the links inside it (``shutil.rmtree``, which on Linux works
  through directory descriptors and so is not fooled by a link swapped in meanwhile).

One refused path refuses the whole manifest: nothing is removed, the command names every
refused path and exits 1. A path already gone is reported as ``missing``. With
``--older-than`` (``90s``, ``30m``, ``12h``, ``7d``) a path whose own modification time (of the
link, not its target) is more recent than that, by the host's clock, is ``kept``. The result is
a JSON report on stdout: ``removed``, ``missing``, ``kept``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import stat
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from workcoord.cli.common import EXIT_ERROR, EXIT_OK, EXIT_USAGE, CliError
from workcoord.cli.roots import ROOTS_ENV, RootsError, canonical, is_within, parse_roots

__all__ = [
    "MAX_PATHS",
    "CleanupPlan",
    "parse_age",
    "plan_cleanup",
    "register_cleanup",
    "resolved_path",
]

MAX_PATHS = 10_000
_AGE = re.compile(r"(\d+)([smhd])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def register_cleanup(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``worker cleanup``."""
    cleanup = sub.add_parser(
        "cleanup",
        help="remove exactly the paths a run's manifest owns, under the repository roots",
    )
    cleanup.add_argument("--manifest", required=True, help='JSON file {"paths": [...]}')
    cleanup.add_argument(
        "--older-than",
        default="",
        metavar="AGE",
        help="keep paths modified more recently than AGE (90s, 30m, 12h, 7d; host clock)",
    )
    cleanup.add_argument(
        "--dry-run", action="store_true", help="report what would go, remove nothing"
    )
    cleanup.set_defaults(handler=_cleanup)


def parse_age(text: str) -> float:
    """Seconds of an ``--older-than`` value (``<n>s|m|h|d``)."""
    match = _AGE.fullmatch(text.strip())
    if match is None:
        raise CliError(f"--older-than must look like 90s, 30m, 12h or 7d, got {text!r}", EXIT_USAGE)
    return float(int(match.group(1)) * _UNIT_SECONDS[match.group(2)])


@dataclass
class CleanupPlan:
    """What a manifest asks for, checked: the paths to remove (their directories resolved),
    those already gone, those kept for being too new, and the refused ones with why (any
    refusal: nothing is removed)."""

    remove: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)


def read_manifest(path: str) -> list[str]:
    """The paths of the manifest at ``path`` (a CliError naming what is wrong with it)."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise CliError(f"cannot read the manifest {path}: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CliError(f"the manifest {path} is not JSON: {exc}") from None
    paths = document.get("paths") if isinstance(document, dict) else None
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise CliError(f'the manifest {path} must be {{"paths": ["/abs/path", ...]}}')
    if len(paths) > MAX_PATHS:
        raise CliError(f"the manifest lists {len(paths)} paths; at most {MAX_PATHS} are allowed")
    return list(dict.fromkeys(paths))


def plan_cleanup(
    paths: list[str], roots: tuple[str, ...], *, older_than: float | None, now: float
) -> CleanupPlan:
    """Check every path of a manifest against the canonical ``roots``; ``now`` is the host
    clock (``time.time()``) for the ``older_than`` check (seconds)."""
    plan = CleanupPlan()
    for path in paths:
        refusal = _refusal(path, roots)
        if refusal:
            plan.refused[path] = refusal
            continue
        resolved = resolved_path(path)
        try:
            status = os.lstat(resolved)
        except FileNotFoundError:
            plan.missing.append(path)
            continue
        except OSError as exc:
            plan.refused[path] = f"cannot be read: {exc.strerror}"
            continue
        if older_than is not None and now - status.st_mtime < older_than:
            plan.kept.append(path)
        else:
            plan.remove.append(resolved)
    return plan


def resolved_path(path: str) -> str:
    """``path`` with the directories on the way resolved; its last segment is not followed."""
    parent, name = os.path.split(os.path.normpath(path))
    return os.path.join(canonical(parent), name)


def _refusal(path: str, roots: tuple[str, ...]) -> str:
    """Why ``path`` may not be removed ("" when it may)."""
    if "\0" in path:
        return "contains a NUL character"
    if not os.path.isabs(path):
        return "is not an absolute path"
    if ".." in path.split("/"):
        return "has a '..' segment"
    normal = os.path.normpath(path)
    if normal == "/":
        return "names no file"
    resolved = resolved_path(normal)
    root = next((r for r in roots if is_within(resolved, r)), None)
    if root is None:
        where = "" if resolved == normal else f" (resolves to {json.dumps(resolved)})"
        return f"is outside the repository roots{where}"
    if resolved == root:
        return "is a repository root"
    return ""


def _remove(path: str) -> None:
    """Remove ``path`` without following it: a link or file is unlinked, a directory's tree
    removed without following the links inside."""
    if stat.S_ISDIR(os.lstat(path).st_mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def _cleanup(args: argparse.Namespace) -> int:
    try:
        roots = parse_roots(os.environ.get(ROOTS_ENV))
    except RootsError as err:
        raise CliError(str(err), EXIT_USAGE) from None
    if not roots:
        raise CliError(
            f"{ROOTS_ENV} names no repository root: cleanup removes nothing outside them"
        )
    older_than = parse_age(args.older_than) if args.older_than else None
    paths = read_manifest(args.manifest)
    plan = plan_cleanup(paths, roots, older_than=older_than, now=time.time())
    if plan.refused:
        for path, why in plan.refused.items():
            print(f"error: {json.dumps(path)} {why}", file=sys.stderr)
        print("error: the manifest was refused: nothing was removed", file=sys.stderr)
        return EXIT_ERROR
    removed: list[str] = []
    if not args.dry_run:
        for path in plan.remove:
            _remove(path)
            removed.append(path)
    report = {
        "removed": removed,
        "missing": plan.missing,
        "kept": plan.kept,
        **({"wouldRemove": plan.remove} if args.dry_run else {}),
    }
    print(json.dumps(report, indent=2))
    return EXIT_OK
