"""entries_under finds what Path.rglob finds (the log and metrics folders' listings)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from core.tools.walk import KeptListing, entries_under, regular_files


def _tree(root: Path) -> None:
    for name in ("a.jsonl", ".hidden.jsonl", ".jsonl", "B.JSONL", "x.jsonl.bak", "m.om", "m.prom", ".om", "n.txt"):
        (root / name).write_text("{}\n")
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "sub" / "s.jsonl").write_text("{}\n")
    (root / "sub" / "deeper" / "d.jsonl").write_text("{}\n")
    (root / "sub" / "deeper" / "d.om").write_text("# EOF\n")
    (root / "dir.jsonl").mkdir()
    (root / "dir.jsonl" / "inner.jsonl").write_text("{}\n")
    (root / ".dot").mkdir()
    (root / ".dot" / "h.jsonl").write_text("{}\n")
    outside = root.parent / f"{root.name}-outside"
    outside.mkdir()
    (outside / "o.jsonl").write_text("{}\n")
    (root / "linked").symlink_to(outside, target_is_directory=True)
    (root / "file-link.jsonl").symlink_to(outside / "o.jsonl")
    (root / "dangling.jsonl").symlink_to(root / "missing")
    (root / "loop").symlink_to(root, target_is_directory=True)


@pytest.mark.parametrize(("pattern", "suffix"), [("*.jsonl", ".jsonl"), ("*", "")])
def test_the_same_entries_as_rglob(tmp_path: Path, pattern: str, suffix: str) -> None:
    root = tmp_path / "logs"
    root.mkdir()
    _tree(root)
    assert sorted(entries_under(root, suffix)) == sorted(root.rglob(pattern))
    assert sorted(p for p in entries_under(root, suffix) if p.is_file()) == \
        sorted(p for p in root.rglob(pattern) if p.is_file())


def test_an_empty_or_missing_folder(tmp_path: Path) -> None:
    assert entries_under(tmp_path) == []
    assert entries_under(tmp_path / "missing") == list((tmp_path / "missing").rglob("*")) == []
    (tmp_path / "f.jsonl").write_text("{}\n")
    assert entries_under(tmp_path / "f.jsonl") == list((tmp_path / "f.jsonl").rglob("*")) == []


RACY_TEST_S = 0.05


def _age(root: Path, seconds: float = 3600) -> None:
    """Every folder of the tree last modified `seconds` ago, and changed (ctime) just over RACY_TEST_S ago: a
    listing is kept only once its folders have settled."""
    past = time.time() - seconds
    for folder, _, _ in os.walk(root):
        os.utime(folder, (past, past))
    time.sleep(2 * RACY_TEST_S)


def test_a_kept_listing_sees_every_change_at_once(tmp_path: Path) -> None:
    """KeptListing answers entries_under's entries after each change anywhere in the tree: a file added to, removed
    from or renamed in a nested folder, a new folder, a folder made unreadable, the root replaced."""
    root = tmp_path / "logs"
    root.mkdir()
    _tree(root)
    listing = KeptListing(root, ".jsonl", racy_s=RACY_TEST_S)

    def same() -> None:
        assert sorted(listing.entries()) == sorted(entries_under(root, ".jsonl"))

    changes: list[Callable[[], object]] = [
        lambda: (root / "sub" / "deeper" / "new.jsonl").write_text("{}\n"),
        lambda: (root / "sub" / "s.jsonl").unlink(),
        lambda: (root / "sub" / "deeper" / "d.jsonl").rename(root / "sub" / "deeper" / "e.jsonl"),
        lambda: (root / "sub" / "fresh").mkdir(),
        lambda: (root / "sub" / "fresh" / "f.jsonl").write_text("{}\n"),
    ]
    for change in changes:
        _age(root)
        same()
        assert listing._kept is not None  # settled: kept, and the next call only checks the folders
        same()
        change()
        same()
    _age(root)
    same()
    (root / "sub" / "deeper").chmod(0)  # unreadable, except to root (who reads any folder: the same entries then)
    try:
        same()
    finally:
        (root / "sub" / "deeper").chmod(0o755)
    same()
    replaced = tmp_path / "other"
    replaced.mkdir()
    (replaced / "only.jsonl").write_text("{}\n")
    _age(replaced)
    _age(root)
    same()
    root.rename(tmp_path / "old")
    replaced.rename(root)
    same()
    assert [p.name for p in listing.entries()] == ["only.jsonl"]


def test_a_listing_of_folders_changed_just_now_is_not_kept(tmp_path: Path) -> None:
    """A folder changed less than RACY_S before the listing started may change again within the same clock tick
    unseen: such a listing is made afresh on the next call."""
    root = tmp_path / "logs"
    root.mkdir()
    (root / "a.jsonl").write_text("{}\n")
    listing = KeptListing(root, ".jsonl", racy_s=RACY_TEST_S)
    assert [p.name for p in listing.entries()] == ["a.jsonl"]
    assert listing._kept is None
    _age(root)
    listing.entries()
    assert listing._kept is not None
    assert KeptListing(tmp_path / "missing").entries() == []


def test_regular_files_keep_what_is_file_keeps_with_its_stat(tmp_path: Path) -> None:
    """regular_files keeps (sorted) what `p.is_file()` keeps among the tree's entries (symlinks to files followed,
    dangling links, folders and looping links left out), each with that file's stat."""
    root = tmp_path / "logs"
    root.mkdir()
    _tree(root)
    entries = entries_under(root)
    kept = regular_files(entries)
    assert [p for p, _ in kept] == sorted(p for p in entries if p.is_file())
    assert all(stat == os.stat(p) for p, stat in kept)
    assert regular_files([root / "missing", root / "sub", root / "a.jsonl" / "x"]) == []
