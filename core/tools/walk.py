"""The files under a folder, as `Path.rglob` finds them (Python 3.11), by os.walk: one scandir pass per folder.

rglob's pure-Python selectors list each folder twice (once for its subfolders, once for the names) and cost ~0.2 ms
for the demo's ten log entries, on every query_logs call. os.walk gives the same paths: every entry whose name ends
with the suffix (case-sensitive, hidden names included, as `*.suffix` matches them), in every folder reached without
following a symlinked folder; an unreadable folder is skipped (rglob's PermissionError), other errors are raised as
rglob raises them. Callers sort, as they did.
"""

from __future__ import annotations

import os
from pathlib import Path


def entries_under(root: Path, suffix: str = "") -> list[Path]:
    """root / ... of every entry under root whose name ends with `suffix` (every entry for ""), unordered; none when
    root is not a folder (rglob's answer too)."""
    if not root.is_dir():
        return []
    return [Path(folder, name) for folder, folders, files in os.walk(root, onerror=_raise_unless_unreadable)
            for name in (*folders, *files) if name.endswith(suffix)]


def _raise_unless_unreadable(error: OSError) -> None:
    if not isinstance(error, PermissionError):
        raise error
