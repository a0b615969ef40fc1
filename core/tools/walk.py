"""The files under a folder, as `Path.rglob` finds them (Python 3.11), by os.walk: one scandir pass per folder.

rglob's pure-Python selectors list each folder twice (once for its subfolders, once for the names) and cost ~0.2 ms
for the demo's ten log entries, on every query_logs call. os.walk gives the same paths: every entry whose name ends
with the suffix (case-sensitive, hidden names included, as `*.suffix` matches them), in every folder reached without
following a symlinked folder; an unreadable folder is skipped (rglob's PermissionError), other errors are raised as
rglob raises them. Callers sort, as they did.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from stat import S_ISREG


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


RACY_S = 2.0
"""A listing made less than this long after a folder's last change (mtime or ctime) is not kept: a change in the same
clock tick as the listing (or between its scan and its check) could leave the folder's times as they were listed."""

_Identity = tuple[int, int, int, int] | None


def _identity(folder: str) -> _Identity:
    """What changes when an entry is added, removed or renamed in the folder (mtime), when it is replaced (device,
    inode) or its permissions change (ctime); None when it cannot be read."""
    try:
        stat = os.stat(folder)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino, stat.st_mtime_ns, stat.st_ctime_ns


class KeptListing:
    """entries_under(root, suffix), kept between calls while no folder of the tree changed: one stat per folder on
    each call instead of a scandir of each and a Path per entry (~110 us for the demo's log folder, every query_logs
    call). Every folder walked, an unreadable one included, is checked; a listing is kept only when every folder's
    last change is RACY_S older than the listing's start, so what the walk could have missed is listed again."""

    def __init__(self, root: Path, suffix: str = "", racy_s: float = RACY_S) -> None:
        self.root = root
        self.suffix = suffix
        self._racy_ns = int(racy_s * 1e9)
        self._kept: tuple[tuple[tuple[str, _Identity], ...], tuple[Path, ...]] | None = None

    def files(self, keep: Callable[[Path], bool] | None = None) -> list[tuple[Path, os.stat_result]]:
        """The root itself (with its stat) when it is a regular file, else the regular files among the entries that
        `keep` accepts (all without it), sorted, each with its stat (regular_files)."""
        found = regular_files([self.root])
        if found:
            return found
        entries = self.entries()
        return regular_files(entries if keep is None else filter(keep, entries))

    def entries(self) -> list[Path]:
        """The entries now (unordered, as entries_under)."""
        kept = self._kept  # one read: a thread may replace it meanwhile
        if kept is not None and all(_identity(folder) == known for folder, known in kept[0]):
            return list(kept[1])
        return self._list()

    def _list(self) -> list[Path]:
        started_ns = time.time_ns()
        folders: list[str] = []
        unreadable: list[str] = []

        def skipped(error: OSError) -> None:
            _raise_unless_unreadable(error)
            unreadable.append(str(error.filename))

        if not self.root.is_dir():
            self._kept = None
            return []
        out: list[Path] = []
        for folder, names, files in os.walk(self.root, onerror=skipped):
            folders.append(folder)
            out += [Path(folder, name) for name in (*names, *files) if name.endswith(self.suffix)]
        identities = tuple((folder, _identity(folder)) for folder in (*folders, *unreadable))
        settled = started_ns - self._racy_ns
        if all(known is not None and known[2] < settled and known[3] < settled for _, known in identities):
            self._kept = (identities, tuple(out))
        else:
            self._kept = None
        return out


_NOT_THERE = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP})
"""The stat errors Path.is_file answers False for (others it raises)."""


def regular_files(paths: Iterable[Path]) -> list[tuple[Path, os.stat_result]]:
    """The paths that are regular files (symlinks followed), sorted, each with its stat: what
    `sorted(p for p in paths if p.is_file())` keeps, with the one stat each is_file makes kept for the caller (the
    log index's signature, the metrics folder's listing) instead of a second one."""
    out: list[tuple[Path, os.stat_result]] = []
    for path in paths:
        try:
            stat = os.stat(path)
        except OSError as exc:
            if exc.errno in _NOT_THERE:
                continue
            raise
        except ValueError:
            continue
        if S_ISREG(stat.st_mode):
            out.append((path, stat))
    out.sort(key=lambda pair: pair[0])
    return out
