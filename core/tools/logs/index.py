"""In-memory indexes of small, unchanged log files, so repeated queries don't re-read them.

A file is indexed the second time a query sees it with the same (device, inode, size, mtime) and dropped when that
changes; per service it keeps the lines' timestamps (sorted), levels and lower-cased messages, so a query bisects
its window and checks only that service's lines there. Files above `max_file_bytes` and anything beyond
`max_bytes` in total are never indexed (the caller streams them). Answers equal the streaming scan's.
"""

from __future__ import annotations

import bisect
import os
import threading
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import orjson

from core.tools.logs.query import REQUIRED_FIELDS, normalise_level, parse_timestamp
from core.tools.logs.scan import Scan, prefilter_hit

DEFAULT_INDEX_MAX_FILE_BYTES = 16 * 1024 * 1024
"""Files up to this size may be indexed in memory; larger ones are always streamed."""
DEFAULT_INDEX_MAX_BYTES = 96 * 1024 * 1024
"""Estimated memory of all indexes of one tool (file bytes + per-line entries); files beyond it are streamed."""
_ROW_OVERHEAD_BYTES = 256
"""Estimated memory of one indexed line besides its message text (tuple, datetime, offsets, list slots)."""
KEPT_TERMS = 16
"""Queries' terms whose matching lines one file index keeps (past it the memo starts again)."""
_TermsKey = tuple[str, str | None, tuple[str, ...]]


@dataclass(frozen=True)
class FileSignature:
    """Identity of a file's content as far as stat can tell."""

    device: int
    inode: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> FileSignature:
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


@dataclass(frozen=True)
class _Lines:
    """Parseable lines of one service (and one level, or all levels) in a file, sorted by (timestamp, line number)."""

    stamps: list[datetime]
    rows: list[tuple[str, int, int, bool]]
    """(lower-cased message, start, end, plain) of each line in `data`; plain: an ASCII line without escapes whose
    service and message are strings, so a term in its message is also in its raw bytes."""
    unplain: list[int]
    """The positions of the rows that are not plain, ascending (most files have none): only those are checked
    against the raw prefilter, so a query over a window of plain lines makes no test per line."""


@dataclass(frozen=True)
class FileIndex:
    """A parsed, immutable view of one unchanged file; shared by concurrent queries."""

    signature: FileSignature
    data: bytes
    lines: dict[tuple[str, str | None], _Lines]
    """(service, level) -> that service's lines at that level; (service, None) -> all its lines."""
    invalid: tuple[bytes, ...]
    """Lower-cased raw lines that are not a JSON object (counted only when the prefilter would have hit them)."""
    missing: tuple[bytes, ...]
    """Lower-cased raw lines without a required field (same)."""
    cost: int
    _seen: dict[_TermsKey, None] = field(default_factory=dict, compare=False, repr=False)
    """(service, level, terms) queried once (at most 4 * KEPT_TERMS, then it starts again)."""
    _hits: dict[_TermsKey, array[int]] = field(default_factory=dict, compare=False, repr=False)
    """For terms asked a second time: the positions of every line of the service (and level) whose message holds
    them, so a query repeated over another window (the first look's count of a service's most frequent message,
    each run) bisects them instead of searching every message of its window again. A pure function of the
    immutable file (a race between threads computes one twice, alike); at most KEPT_TERMS per file."""

    def _keep_hits(self, key: _TermsKey, rows: list[tuple[str, int, int, bool]], terms: tuple[str, ...], lo: int,
                   hi: int) -> list[int]:
        """The window's lines holding the terms, after keeping every line's that holds them."""
        if len(self._hits) >= KEPT_TERMS:
            self._hits.clear()
        every = array("l", _holding(rows, terms, 0, len(rows)))
        self._hits[key] = every
        return list(every[bisect.bisect_left(every, lo):bisect.bisect_left(every, hi)])

    @classmethod
    def build(cls, signature: FileSignature, data: bytes) -> FileIndex:
        """Parse every line once, exactly as the streaming path parses a candidate line."""
        grouped: dict[tuple[str, str | None], list[tuple[datetime, int, tuple[str, int, int, bool]]]] = {}
        invalid: list[bytes] = []
        missing: list[bytes] = []
        cost = len(data)
        start = 0
        for number, line in enumerate(data.split(b"\n")):
            end = start + len(line)
            line_start, start = start, end + 1
            if not line.strip():
                continue
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError:
                invalid.append(line.lower())
                cost += len(line)
                continue
            if not isinstance(obj, dict):
                invalid.append(line.lower())
                cost += len(line)
                continue
            if any(key not in obj for key in REQUIRED_FIELDS):
                missing.append(line.lower())
                cost += len(line)
                continue
            ts = parse_timestamp(obj["timestamp"])
            if ts is None:  # never inside a window: cannot match any query
                continue
            service, message = obj["service"], obj["message"]
            plain = isinstance(service, str) and isinstance(message, str) and line.isascii() and b"\\" not in line
            row = (str(message).lower(), line_start, end, plain)
            cost += len(row[0]) + _ROW_OVERHEAD_BYTES
            name = str(service).strip().lower()
            grouped.setdefault((name, None), []).append((ts, number, row))
            grouped.setdefault((name, normalise_level(obj["level"])), []).append((ts, number, row))
        lines: dict[tuple[str, str | None], _Lines] = {}
        for key, entries in grouped.items():
            entries.sort(key=lambda entry: (entry[0], entry[1]))
            rows = [entry[2] for entry in entries]
            lines[key] = _Lines(stamps=[entry[0] for entry in entries], rows=rows,
                                unplain=[i for i, row in enumerate(rows) if not row[3]])
        return cls(signature, data, lines, tuple(invalid), tuple(missing), cost)

    def scan(self, scan: Scan) -> None:
        """Feed this file's matches to the scan in (timestamp, line) order, as the streaming path would rank them."""
        matcher = scan.matcher
        scan.invalid_lines += sum(1 for low in self.invalid if prefilter_hit(low, matcher))
        scan.missing_fields += sum(1 for low in self.missing if prefilter_hit(low, matcher))
        lines = self.lines.get((matcher.service, matcher.level))
        if lines is None:
            return
        lo = bisect.bisect_left(lines.stamps, matcher.start)
        hi = bisect.bisect_right(lines.stamps, matcher.end)
        scan.candidates += hi - lo
        rows, terms, data, stamps = lines.rows, matcher.terms, self.data, lines.stamps
        # The streaming path only sees lines whose raw bytes pass the prefilter (a keyword written as a \uXXXX escape
        # does not): recheck the lines whose raw bytes and parsed text may differ.
        found: Sequence[int]
        if not terms:  # every line (the first look's ERROR and WARN calls): only the window's unplain lines tested
            unplain = lines.unplain
            hidden = {i for i in unplain[bisect.bisect_left(unplain, lo):bisect.bisect_left(unplain, hi)]
                      if not prefilter_hit(data[rows[i][1]:rows[i][2]].lower(), matcher)}
            found = [i for i in range(lo, hi) if i not in hidden] if hidden else range(lo, hi)
        else:
            key = (matcher.service, matcher.level, terms)
            known = self._hits.get(key)
            if known is not None:  # this file's lines holding the terms, found by an earlier query: the window's
                hits: Sequence[int] = known[bisect.bisect_left(known, lo):bisect.bisect_left(known, hi)]
            elif key in self._seen:
                hits = self._keep_hits(key, rows, terms, lo, hi)
            else:
                if len(self._seen) >= 4 * KEPT_TERMS:
                    self._seen.clear()
                self._seen[key] = None
                hits = _holding(rows, terms, lo, hi)
            unplain = lines.unplain
            hidden = {i for i in unplain[bisect.bisect_left(unplain, lo):bisect.bisect_left(unplain, hi)]
                      if not prefilter_hit(data[rows[i][1]:rows[i][2]].lower(), matcher)}
            found = [i for i in hits if i not in hidden] if hidden else hits
        # Matches arrive in ascending (timestamp, line) order: only this file's first `limit` can be kept.
        for position in found[: scan.limit]:
            _, start, end, _ = rows[position]
            scan.record(stamps[position], data[start:end])
        rest = found[scan.limit :]
        if rest:
            scan.count(stamps[rest[0]], stamps[rest[-1]], len(rest))


def _holding(rows: list[tuple[str, int, int, bool]], terms: tuple[str, ...], lo: int, hi: int) -> list[int]:
    """The positions in [lo, hi) of the rows whose lower-cased message holds every term."""
    if len(terms) == 1:
        term = terms[0]
        return [i for i in range(lo, hi) if term in rows[i][0]]
    return [i for i in range(lo, hi) if all(t in rows[i][0] for t in terms)]


class IndexCache:
    """Per-tool cache of file indexes, bounded in file size and total estimated memory; thread-safe."""

    def __init__(self, max_file_bytes: int, max_bytes: int) -> None:
        self.max_file_bytes = max_file_bytes
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._indexes: dict[Path, FileIndex] = {}
        self._seen: dict[Path, FileSignature] = {}
        self._building: dict[Path, threading.Lock] = {}
        self._used = 0

    @property
    def used_bytes(self) -> int:
        return self._used

    def __len__(self) -> int:
        return len(self._indexes)

    def lookup(self, path: Path, signature: FileSignature) -> tuple[FileIndex | None, bool]:
        """(the index of this unchanged file, whether to build one now); forgets an index whose file changed."""
        with self._lock:
            index = self._indexes.get(path)
            if index is not None:
                if index.signature == signature:
                    return index, False
                self._drop(path)
            seen_before = self._seen.get(path) == signature
            self._seen[path] = signature
            fits = signature.size <= self.max_file_bytes and self._used + signature.size <= self.max_bytes
            return None, seen_before and fits

    def build(self, path: Path, signature: FileSignature) -> FileIndex | None:
        """Read and index the file (once, however many queries ask at the same time); None when it changed meanwhile."""
        with self._lock:
            building = self._building.setdefault(path, threading.Lock())
        with building:
            with self._lock:
                current = self._indexes.get(path)
                if current is not None and current.signature == signature:  # another query built it meanwhile
                    return current
            with path.open("rb") as handle:
                if FileSignature.of(os.fstat(handle.fileno())) != signature:
                    return None
                data = handle.read(signature.size + 1)
            if len(data) != signature.size:
                return None
            index = FileIndex.build(signature, data)
            with self._lock:
                if self._seen.get(path) != signature or path in self._indexes or self._used + index.cost > self.max_bytes:
                    return index  # usable for this query, not kept
                self._indexes[path] = index
                self._used += index.cost
            return index

    def retain(self, paths: set[Path]) -> None:
        """Forget files that are no longer in the folder."""
        with self._lock:
            for path in [p for p in self._seen if p not in paths]:
                del self._seen[path]
                self._building.pop(path, None)
            for path in [p for p in self._indexes if p not in paths]:
                self._drop(path)

    def _drop(self, path: Path) -> None:
        index = self._indexes.pop(path, None)
        if index is not None:
            self._used -= index.cost
