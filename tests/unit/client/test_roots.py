"""Repository roots: parsing the variable, and which worktrees an item may name (real
directories and symlinks in a temporary folder); the branch read from a real git checkout."""

from __future__ import annotations

import json
import os
import posixpath
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workcoord.cli.roots import (
    MAX_ROOTS,
    ROOTS_ENV,
    RootsError,
    choose_worktree,
    current_branch,
    git_read,
    is_within,
    parse_roots,
)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """``own/``, ``srv/lanes/{a,b}``, ``srv/lanes2/x``, ``outside/`` and symlinks between them."""
    base = Path(os.path.realpath(tmp_path))
    for folder in ("own/sub", "srv/lanes/a", "srv/lanes/b", "srv/lanes2/x", "outside/deep"):
        (base / folder).mkdir(parents=True)
    (base / "srv/lanes/escape").symlink_to(base / "outside")
    (base / "srv/lanes/inner").symlink_to(base / "srv/lanes/a")
    (base / "outside/into-lanes").symlink_to(base / "srv/lanes/b")
    (base / "srv/lanes/a-file").write_text("not a folder")
    return base


def choose(tree: Path, requested: object) -> tuple[str, str]:
    choice = choose_worktree({"worktree": requested}, str(tree / "own"), (str(tree / "srv/lanes"),))
    return choice.path, choice.refusal


# ------------------------------------------------------------------------ the variable


@pytest.mark.parametrize("text", [None, "", "   "])
def test_unset_or_blank_means_no_roots(text: str | None) -> None:
    assert parse_roots(text) == ()


def test_roots_are_canonical_and_deduplicated(tree: Path) -> None:
    text = json.dumps(
        [str(tree / "srv/lanes"), str(tree / "srv/lanes/../lanes/"), str(tree / "srv/lanes/inner")]
    )
    assert parse_roots(text) == (str(tree / "srv/lanes"), str(tree / "srv/lanes/a"))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("not json", "is not JSON"),
        ('{"a": "/tmp"}', "must be a JSON array"),
        ('"/tmp"', "must be a JSON array"),
        ("[1]", "[0] must be a non-empty string"),
        ('[""]', "[0] must be a non-empty string"),
        ('["/tmp", "relative/path"]', "[1] must be an absolute path"),
        ('["/tmp/\\u0000x"]', "NUL"),
        ('["/no/such/folder/anywhere"]', "is not an existing directory"),
    ],
)
def test_malformed_roots_are_refused_with_a_reason(value: str, message: str) -> None:
    with pytest.raises(RootsError) as caught:
        parse_roots(value)
    assert message in str(caught.value)
    assert ROOTS_ENV in str(caught.value)


def test_a_file_is_not_a_root(tree: Path) -> None:
    with pytest.raises(RootsError, match="not an existing directory"):
        parse_roots(json.dumps([str(tree / "srv/lanes/a-file")]))


def test_at_most_64_roots(tree: Path) -> None:
    assert len(parse_roots(json.dumps([str(tree)] * MAX_ROOTS))) == 1
    with pytest.raises(RootsError, match="65 entries; at most 64"):
        parse_roots(json.dumps([str(tree)] * (MAX_ROOTS + 1)))


# ------------------------------------------------------------------------ boundaries


@pytest.mark.parametrize(
    ("path", "root", "inside"),
    [
        ("/srv/lanes", "/srv/lanes", True),
        ("/srv/lanes/a", "/srv/lanes", True),
        ("/srv/lanes/a/b/c", "/srv/lanes", True),
        ("/srv/lanes2", "/srv/lanes", False),
        ("/srv/lanes2/a", "/srv/lanes", False),
        ("/srv/lane", "/srv/lanes", False),
        ("/srv", "/srv/lanes", False),
        ("/srv/lanes-old/a", "/srv/lanes", False),
        ("/anything", "/", True),
        ("/", "/", True),
    ],
)
def test_inside_means_on_a_directory_boundary(path: str, root: str, inside: bool) -> None:
    assert is_within(path, root) is inside


_SEGMENT = st.text(alphabet="ab-.", min_size=1, max_size=3).filter(lambda s: s not in (".", ".."))


@given(st.lists(_SEGMENT, min_size=1, max_size=4), st.lists(_SEGMENT, min_size=1, max_size=4))
def test_inside_agrees_with_commonpath(path_parts: list[str], root_parts: list[str]) -> None:
    path = "/" + "/".join(path_parts)
    root = "/" + "/".join(root_parts)
    assert is_within(path, root) is (posixpath.commonpath([path, root]) == root)


# ------------------------------------------------------------------------ worktrees


def test_no_worktree_runs_in_the_supervisors_own_directory(tree: Path) -> None:
    choice = choose_worktree({"other": 1}, str(tree / "own"), ())
    assert (choice.path, choice.refusal) == (str(tree / "own"), "")


@pytest.mark.parametrize(
    ("requested", "expected"),
    [
        ("srv/lanes/a", "srv/lanes/a"),
        ("srv/lanes", "srv/lanes"),  # the root itself
        ("srv/lanes/a/", "srv/lanes/a"),
        ("srv/lanes//b", "srv/lanes/b"),
        ("srv/lanes/b/../a", "srv/lanes/a"),
        ("srv/lanes/inner", "srv/lanes/a"),  # a symlink that stays inside
        ("outside/into-lanes", "srv/lanes/b"),  # the path outside, its target inside
        ("own", "own"),
        ("own/sub", "own/sub"),
    ],
)
def test_trusted_worktrees(tree: Path, requested: str, expected: str) -> None:
    path, refusal = choose(tree, str(tree / requested))
    assert refusal == ""
    assert path == str(tree / expected)


@pytest.mark.parametrize(
    ("requested", "reason"),
    [
        ("srv/lanes2/x", "is outside"),  # sibling prefix
        ("srv/lanes2", "is outside"),
        ("srv/lanes/../lanes2/x", "is outside"),
        ("srv/lanes/escape", "resolves to"),  # a symlink escaping the root
        ("srv/lanes/escape/deep", "is outside"),
        ("outside", "is outside"),
        ("srv", "is outside"),
        ("srv/lanes/missing", "not an existing directory"),
        ("srv/lanes/a-file", "not an existing directory"),
    ],
)
def test_refused_worktrees_name_the_path(tree: Path, requested: str, reason: str) -> None:
    path, refusal = choose(tree, str(tree / requested))
    assert path == ""
    assert reason in refusal
    assert json.dumps(str(tree / requested)) in refusal


def test_a_missing_folder_outside_is_refused_as_outside(tree: Path) -> None:
    """Whether it exists is none of the queue's business."""
    _, refusal = choose(tree, str(tree / "outside/nothing-here"))
    assert "is outside" in refusal


@pytest.mark.parametrize(
    ("requested", "reason"),
    [
        ("relative/path", "is not an absolute path"),
        ("", "must be a non-empty string"),
        (7, "must be a non-empty string"),
        (["/tmp"], "must be a non-empty string"),
        ("/tmp/a\0b", "NUL"),
    ],
)
def test_malformed_worktrees(tree: Path, requested: object, reason: str) -> None:
    assert reason in choose(tree, requested)[1]


def test_a_refusal_escapes_what_the_queue_sent(tree: Path) -> None:
    _, refusal = choose(tree, "/outside\nFAKE LOG LINE")
    assert "\n" not in refusal and "\\nFAKE" in refusal


def test_queue_inputs_never_add_a_root(tree: Path) -> None:
    inputs = {"worktree": str(tree / "outside"), "roots": [str(tree / "outside")]}
    assert not choose_worktree(inputs, str(tree / "own"), ()).allowed


# ------------------------------------------------------------------------ git


def _git(directory: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(directory), "-c", "user.email=t@t", "-c", "user.name=t", *args],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    repo = Path(os.path.realpath(tmp_path)) / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "fix/parser")
    (repo / "a.txt").write_text("a")
    _git(repo, "add", "a.txt")
    _git(repo, "commit", "-q", "-m", "first")
    return repo


def test_the_branch_is_read_from_the_checkout(checkout: Path) -> None:
    assert current_branch(str(checkout)) == "fix/parser"
    (checkout / "sub").mkdir()
    assert current_branch(str(checkout / "sub")) == "fix/parser"


def test_a_detached_head_is_named_by_its_commit(checkout: Path) -> None:
    _git(checkout, "checkout", "-q", "--detach")
    sha = _git(checkout, "rev-parse", "--short=12", "HEAD")
    assert current_branch(str(checkout)) == f"detached@{sha}"


def test_a_branch_without_a_commit_yet(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q", "-b", "new-work")
    assert current_branch(str(tmp_path)) == "new-work"


def test_a_plain_folder_has_no_branch(tmp_path: Path) -> None:
    assert current_branch(str(tmp_path)) is None


def test_gits_environment_cannot_point_elsewhere(
    checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    _git(other, "init", "-q", "-b", "elsewhere")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    assert current_branch(str(checkout)) == "fix/parser"


def test_a_repositorys_fsmonitor_does_not_run(checkout: Path, tmp_path: Path) -> None:
    marker = tmp_path / "fsmonitor-ran"
    hook = tmp_path / "fsmonitor-hook"
    hook.write_text(f"#!/bin/sh\ntouch '{marker}'\nexit 1\n")
    hook.chmod(0o755)
    _git(checkout, "config", "core.fsmonitor", str(hook))
    _git(checkout, "status", "--porcelain")  # plain git does run it: the test can fail
    assert marker.exists()
    marker.unlink()

    git_read(str(checkout), "status", "--porcelain")
    assert current_branch(str(checkout)) == "fix/parser"
    assert not marker.exists()
