"""Where ``workcoord worker run`` may run a command: its own directory and the repository roots.

``WORKCOORD_WORKER_REPOSITORY_ROOTS`` is a JSON array of at most 64 absolute directories the
operator trusts. An item may ask for a worktree in ``inputs.worktree``; the supervisor runs
there only when the path, with every symlink resolved, lies inside its own directory or one of
the roots, on directory boundaries (``/srv/lanes2`` is not inside ``/srv/lanes``). Queue inputs
never add authority: anything else is refused before the command exists.

The branch recorded in the run identity is read from the checkout itself, by git, with hooks
and fsmonitor disabled and git's own environment variables removed (a repository's config must
not be able to run code in the supervisor, and ``GIT_DIR`` must not point git elsewhere).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "MAX_ROOTS",
    "ROOTS_ENV",
    "WORKTREE_INPUT",
    "GitReadError",
    "RootsError",
    "WorktreeChoice",
    "canonical",
    "choose_worktree",
    "current_branch",
    "git_read",
    "is_within",
    "own_directory",
    "parse_roots",
]

ROOTS_ENV = "WORKCOORD_WORKER_REPOSITORY_ROOTS"
MAX_ROOTS = 64
WORKTREE_INPUT = "worktree"

# Settings that keep a git read from running anything a repository configured.
_GIT_SAFE_CONFIG = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.untrackedCache=false",
)
_GIT_TIMEOUT_SECONDS = 30.0


class RootsError(ValueError):
    """``WORKCOORD_WORKER_REPOSITORY_ROOTS`` is malformed (a start-up error)."""


class GitReadError(RuntimeError):
    """A git read failed or git is missing."""


def canonical(path: str | os.PathLike[str]) -> str:
    """``path`` absolute with every symlink, ``.`` and ``..`` resolved."""
    return os.path.realpath(path)


def is_within(path: str, root: str) -> bool:
    """Whether canonical ``path`` is ``root`` or below it, on a directory boundary."""
    if path == root:
        return True
    prefix = root if root.endswith("/") else root + "/"
    return path.startswith(prefix)


def parse_roots(text: str | None) -> tuple[str, ...]:
    """The canonical roots from the variable's value (unset or blank: none).

    Raises :class:`RootsError` naming the problem: not JSON, not an array, more than
    :data:`MAX_ROOTS` entries, an entry that is not an absolute path of an existing directory.
    """
    if text is None or not text.strip():
        return ()
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RootsError(f"{ROOTS_ENV} is not JSON: {exc.msg}") from None
    if not isinstance(value, list):
        raise RootsError(f"{ROOTS_ENV} must be a JSON array of absolute directories")
    if len(value) > MAX_ROOTS:
        raise RootsError(f"{ROOTS_ENV} has {len(value)} entries; at most {MAX_ROOTS} are allowed")
    roots: list[str] = []
    for index, entry in enumerate(value):
        where = f"{ROOTS_ENV}[{index}]"
        if not isinstance(entry, str) or not entry:
            raise RootsError(f"{where} must be a non-empty string")
        if "\0" in entry:
            raise RootsError(f"{where} contains a NUL character")
        if not os.path.isabs(entry):
            raise RootsError(f"{where} must be an absolute path, got {entry!r}")
        resolved = canonical(entry)
        if not os.path.isdir(resolved):
            raise RootsError(f"{where} is not an existing directory: {entry!r}")
        roots.append(resolved)
    return tuple(dict.fromkeys(roots))


@dataclass(frozen=True, slots=True)
class WorktreeChoice:
    """Where to run: ``path`` (canonical) when allowed, else ``refusal`` says why."""

    path: str = ""
    refusal: str = ""

    @property
    def allowed(self) -> bool:
        return not self.refusal


def choose_worktree(
    inputs: Mapping[str, object], own_directory: str, roots: Sequence[str]
) -> WorktreeChoice:
    """The worktree for an item: ``inputs["worktree"]`` if trusted, else the supervisor's own
    directory when the item names none. ``own_directory`` and ``roots`` are canonical."""
    if WORKTREE_INPUT not in inputs:
        return WorktreeChoice(path=own_directory)
    requested = inputs[WORKTREE_INPUT]
    if not isinstance(requested, str) or not requested:
        return WorktreeChoice(refusal="inputs.worktree must be a non-empty string")
    shown = json.dumps(requested)  # quoted and escaped: the path comes from the queue
    if "\0" in requested:
        return WorktreeChoice(refusal=f"inputs.worktree {shown} contains a NUL character")
    if not os.path.isabs(requested):
        return WorktreeChoice(refusal=f"inputs.worktree {shown} is not an absolute path")
    resolved = canonical(requested)
    trusted = (own_directory, *roots)
    if not any(is_within(resolved, root) for root in trusted):
        where = "" if resolved == requested else f" (resolves to {json.dumps(resolved)})"
        return WorktreeChoice(
            refusal=f"worktree {shown}{where} is outside this supervisor's directory and "
            f"its repository roots ({ROOTS_ENV})"
        )
    if not os.path.isdir(resolved):
        return WorktreeChoice(refusal=f"worktree {shown} is not an existing directory")
    return WorktreeChoice(path=resolved)


def git_read(directory: str, *args: str) -> str:
    """Run ``git <args>`` in ``directory`` with hooks and fsmonitor off; its stdout, stripped.

    Raises :class:`GitReadError` when git is missing or answers non-zero.
    """
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0")
    try:
        completed = subprocess.run(  # noqa: S603  # fixed git arguments, no shell
            ["git", "-C", directory, *_GIT_SAFE_CONFIG, *args],  # noqa: S607  # git from PATH
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitReadError(f"git {args[0] if args else ''} failed: {exc}") from None
    if completed.returncode != 0:
        raise GitReadError(completed.stderr.strip() or f"git exited {completed.returncode}")
    return completed.stdout.strip()


def current_branch(directory: str) -> str | None:
    """The branch checked out at ``directory`` (``detached@<sha>`` on a detached HEAD), or
    None when it is not inside a git work tree. One git call in the usual case."""
    try:
        inside, _, head = git_read(
            directory, "rev-parse", "--is-inside-work-tree", "--abbrev-ref", "HEAD"
        ).partition("\n")
    except GitReadError:
        return _unborn_branch(directory)  # or no work tree at all
    if inside != "true":
        return None
    if head != "HEAD":
        return head
    try:
        return "detached@" + git_read(directory, "rev-parse", "--short=12", "HEAD")
    except GitReadError:
        return None


def _unborn_branch(directory: str) -> str | None:
    """The branch of a work tree without a commit yet (HEAD names no object)."""
    try:
        if git_read(directory, "rev-parse", "--is-inside-work-tree") != "true":
            return None
        return git_read(directory, "symbolic-ref", "--quiet", "--short", "HEAD")
    except GitReadError:
        return None


def own_directory() -> str:
    """The supervisor's own directory, canonical."""
    return canonical(Path.cwd())
