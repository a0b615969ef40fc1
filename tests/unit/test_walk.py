"""entries_under finds what Path.rglob finds (the log and metrics folders' listings)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.tools.walk import entries_under


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
