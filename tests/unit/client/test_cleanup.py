"""``workcoord worker cleanup``: exactly the manifest's paths, only under the repository roots,
never following a symlink out, ``--older-than`` by the host clock."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from workcoord.cli.main import main
from workcoord.cli.roots import ROOTS_ENV


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    repos = tmp_path / "repos"
    repos.mkdir()
    monkeypatch.setenv(ROOTS_ENV, json.dumps([str(repos)]))
    return repos


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious").write_text("keep me")
    return elsewhere


def cleanup(tmp_path: Path, paths: list[str], *extra: str) -> int:
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"paths": paths}))
    return main(["worker", "cleanup", "--manifest", str(manifest), *extra])


def test_it_removes_exactly_the_listed_paths(
    tmp_path: Path, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = root / "lane-1"
    (run / "build").mkdir(parents=True)
    (run / "build" / "out.o").write_text("x")
    (run / "log.txt").write_text("x")
    (run / "keep.txt").write_text("x")
    paths = [str(run / "build"), str(run / "log.txt"), str(run / "gone")]

    assert cleanup(tmp_path, paths) == 0
    report = json.loads(capsys.readouterr().out)
    assert report == {"removed": paths[:2], "missing": paths[2:], "kept": []}
    assert sorted(p.name for p in run.iterdir()) == ["keep.txt"]


def test_a_symlink_is_removed_as_a_link_never_followed(
    tmp_path: Path, root: Path, outside: Path
) -> None:
    link = root / "link"
    link.symlink_to(outside)
    tree = root / "tree"
    tree.mkdir()
    (tree / "inner").symlink_to(outside / "precious")
    assert cleanup(tmp_path, [str(link), str(tree)]) == 0
    assert not link.is_symlink() and not tree.exists()
    assert (outside / "precious").read_text() == "keep me"


@pytest.mark.parametrize(
    "case",
    ["outside", "dotdot", "through_link", "relative", "the_root", "nul"],
)
def test_one_refused_path_refuses_the_whole_manifest(
    tmp_path: Path,
    root: Path,
    outside: Path,
    case: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    owned = root / "owned.txt"
    owned.write_text("x")
    (root / "escape").symlink_to(outside)
    bad = {
        "outside": str(outside / "precious"),
        "dotdot": f"{root}/../elsewhere/precious",
        "through_link": str(root / "escape" / "precious"),
        "relative": "repos/owned.txt",
        "the_root": str(root),
        "nul": f"{root}/a\0b",
    }[case]
    assert cleanup(tmp_path, [str(owned), bad]) == 1
    err = capsys.readouterr().err
    assert "nothing was removed" in err
    assert owned.exists(), "a refused manifest removes nothing"
    assert (outside / "precious").read_text() == "keep me"
    expected = {
        "outside": "outside the repository roots",
        "dotdot": "'..' segment",
        "through_link": "outside the repository roots (resolves to",
        "relative": "not an absolute path",
        "the_root": "is a repository root",
        "nul": "NUL",
    }[case]
    assert expected in err


def test_older_than_keeps_what_is_newer_by_the_host_clock(
    tmp_path: Path, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = root / "old.txt", root / "new.txt"
    old.write_text("x")
    new.write_text("x")
    an_hour_ago = time.time() - 3600
    os.utime(old, (an_hour_ago, an_hour_ago))
    assert cleanup(tmp_path, [str(old), str(new)], "--older-than", "30m") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["removed"] == [str(old)] and report["kept"] == [str(new)]
    assert new.exists() and not old.exists()


def test_a_dry_run_removes_nothing(
    tmp_path: Path, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    owned = root / "owned.txt"
    owned.write_text("x")
    assert cleanup(tmp_path, [str(owned)], "--dry-run") == 0
    assert json.loads(capsys.readouterr().out)["wouldRemove"] == [str(owned)]
    assert owned.exists()


def test_no_roots_or_a_bad_manifest_removes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = tmp_path / "victim"
    victim.write_text("x")
    monkeypatch.delenv(ROOTS_ENV, raising=False)
    assert cleanup(tmp_path, [str(victim)]) == 1
    assert "names no repository root" in capsys.readouterr().err
    monkeypatch.setenv(ROOTS_ENV, json.dumps([str(tmp_path)]))
    (tmp_path / "bad.json").write_text('{"paths": "/etc"}')
    assert main(["worker", "cleanup", "--manifest", str(tmp_path / "bad.json")]) == 1
    assert "must be" in capsys.readouterr().err
    assert cleanup(tmp_path, [str(victim)], "--older-than", "soon") == 2
    assert victim.exists()
