"""query_logs over a folder of JSON-lines files: a streaming scan with a raw-bytes prefilter before JSON parsing.

Lines are read in large chunks; each chunk is lowercased once and searched with `bytes.find` for the most
selective needle, so only candidate lines are cut out and parsed (orjson). Matches are returned in
chronological order (oldest first): the first `limit` matches of the window; `total_count` counts them all.

Small files that stay unchanged between queries (the demo data, rotated logs) are parsed once into an in-memory
index: per service, the lines' timestamps (sorted), levels and lower-cased messages, so a query bisects its window
and checks only that service's lines there. A file is indexed the second time a query sees it with the same
(device, inode, size, mtime) and is dropped when that changes; files above `index_max_file_bytes` and anything
beyond `index_max_bytes` in total are always streamed, so a 1 GB file still costs one streaming pass and bounded
memory. Both paths return the same matches, order, count and skipped-line counters; only `candidate_lines`
differs in meaning (lines examined: raw-prefilter hits when streaming, the service's lines in the window when
indexed).
"""

from __future__ import annotations

import asyncio
import bisect
import heapq
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel

from core.contracts.evidence import RawResult, ToolName
from core.errors import ToolFailure
from core.tools.args import LogsArgs
from core.tools.log_query import REQUIRED_FIELDS, LineMatcher, normalise_level, parse_timestamp

DEFAULT_CHUNK_BYTES = 8 * 1024 * 1024
DEFAULT_INDEX_MAX_FILE_BYTES = 16 * 1024 * 1024
"""Files up to this size may be indexed in memory; larger ones are always streamed."""
DEFAULT_INDEX_MAX_BYTES = 96 * 1024 * 1024
"""Estimated memory of all indexes of one tool (file bytes + per-line entries); files beyond it are streamed."""
_ROW_OVERHEAD_BYTES = 256
"""Estimated memory of one indexed line besides its message text (tuple, datetime, offsets, list slots)."""


def iso_utc(value: datetime) -> str:
    """ISO-8601 in UTC with a 'Z' suffix (milliseconds only when the time has them)."""
    spec = "milliseconds" if value.microsecond else "seconds"
    return value.astimezone(UTC).isoformat(timespec=spec).replace("+00:00", "Z")


@dataclass
class _Scan:
    """Mutable state of one query: bounded heap of the earliest matches plus counters."""

    matcher: LineMatcher
    limit: int
    total: int = 0
    seq: int = 0
    candidates: int = 0
    invalid_lines: int = 0
    missing_fields: int = 0
    first: datetime | None = None
    last: datetime | None = None
    heap: list[tuple[float, int, dict[str, Any] | bytes]] = field(default_factory=list)

    def consider(self, raw: bytes) -> None:
        """Parse one candidate line and record it when it matches."""
        self.candidates += 1
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            self.invalid_lines += 1
            return
        if not isinstance(obj, dict):
            self.invalid_lines += 1
            return
        if any(key not in obj for key in REQUIRED_FIELDS):
            self.missing_fields += 1
            return
        ts = self.matcher.matches(obj)
        if ts is None:
            return
        self.record(ts, obj)

    def count(self, first: datetime, last: datetime, lines: int = 1) -> None:
        """Count matching lines (timestamps from `first` to `last`) that cannot be among the kept ones."""
        self.total += lines
        self.seq += lines
        self.first = first if self.first is None or first < self.first else self.first
        self.last = last if self.last is None or last > self.last else self.last

    def record(self, ts: datetime, line: dict[str, Any] | bytes) -> None:
        """Count one matching line (parsed, or its raw bytes to parse only if it is kept)."""
        self.count(ts, ts)
        # Max-heap (negated keys) holding the `limit` earliest matches.
        entry = (-ts.timestamp(), -self.seq, line)
        if len(self.heap) < self.limit:
            heapq.heappush(self.heap, entry)
        elif entry > self.heap[0]:
            heapq.heapreplace(self.heap, entry)

    def items(self) -> list[dict[str, Any]]:
        """Matches kept, oldest first."""
        ordered = sorted(self.heap, key=lambda e: (-e[0], -e[1]))
        return [_item(line if isinstance(line, dict) else orjson.loads(line)) for _, _, line in ordered]


def _item(obj: dict[str, Any]) -> dict[str, Any]:
    item: dict[str, Any] = {key: obj[key] for key in REQUIRED_FIELDS}
    item["level"] = str(item["level"])
    item.update({key: value for key, value in obj.items() if key not in REQUIRED_FIELDS})
    return item


def scan_block(block: bytes, lo: int, hi: int, scan: _Scan) -> None:
    """Find candidate lines in block[lo:hi] (whole lines) via the lowercased prefilter and consider them."""
    matcher = scan.matcher
    if lo >= hi:
        return
    if matcher.anchor is None:
        for line in block[lo:hi].splitlines():
            if line.strip():
                scan.consider(line)
        return
    low = block.lower()
    anchor, needles = matcher.anchor, matcher.needles
    pos = low.find(anchor, lo, hi)
    while pos != -1:
        start = low.rfind(b"\n", lo, pos) + 1
        start = max(start, lo)
        end = low.find(b"\n", pos, hi)
        if end == -1:
            end = hi
        if not needles or all(low.find(n, start, end) != -1 for n in needles):
            scan.consider(block[start:end])
        pos = low.find(anchor, end, hi)


def scan_file(path: Path, scan: _Scan, chunk_bytes: int) -> int:
    """Stream one file through the prefilter; returns the bytes read."""
    read = 0
    carry = b""
    with path.open("rb") as handle:
        while True:
            block = handle.read(chunk_bytes)
            if not block:
                break
            read += len(block)
            first_nl = block.find(b"\n")
            if first_nl == -1:
                carry += block
                continue
            # The line straddling the previous chunk is scanned on its own, so the big block is never copied.
            head = carry + block[: first_nl + 1]
            scan_block(head, 0, len(head), scan)
            last_nl = block.rfind(b"\n")
            scan_block(block, first_nl + 1, last_nl + 1, scan)
            carry = block[last_nl + 1 :]
    if carry:
        scan_block(carry, 0, len(carry), scan)
    return read


def _prefilter_hit(low: bytes, matcher: LineMatcher) -> bool:
    """The streaming prefilter's verdict on one lower-cased raw line (anchor and every needle present)."""
    anchor = matcher.anchor
    return anchor is not None and anchor in low and all(n in low for n in matcher.needles)


@dataclass(frozen=True)
class _Signature:
    """Identity of a file's content as far as stat can tell."""

    device: int
    inode: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> _Signature:
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


@dataclass(frozen=True)
class _Lines:
    """Parseable lines of one service (and one level, or all levels) in a file, sorted by (timestamp, line number)."""

    stamps: list[datetime]
    rows: list[tuple[str, int, int, bool]]
    """(lower-cased message, start, end, plain) of each line in `data`; plain: an ASCII line without escapes whose
    service and message are strings, so a term in its message is also in its raw bytes."""


@dataclass(frozen=True)
class _FileIndex:
    """A parsed, immutable view of one unchanged file; shared by concurrent queries."""

    signature: _Signature
    data: bytes
    lines: dict[tuple[str, str | None], _Lines]
    """(service, level) -> that service's lines at that level; (service, None) -> all its lines."""
    invalid: tuple[bytes, ...]
    """Lower-cased raw lines that are not a JSON object (counted only when the prefilter would have hit them)."""
    missing: tuple[bytes, ...]
    """Lower-cased raw lines without a required field (same)."""
    cost: int

    @classmethod
    def build(cls, signature: _Signature, data: bytes) -> _FileIndex:
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
            lines[key] = _Lines(stamps=[entry[0] for entry in entries], rows=[entry[2] for entry in entries])
        return cls(signature, data, lines, tuple(invalid), tuple(missing), cost)

    def scan(self, scan: _Scan) -> None:
        """Feed this file's matches to the scan in (timestamp, line) order, as the streaming path would rank them."""
        matcher = scan.matcher
        scan.invalid_lines += sum(1 for low in self.invalid if _prefilter_hit(low, matcher))
        scan.missing_fields += sum(1 for low in self.missing if _prefilter_hit(low, matcher))
        lines = self.lines.get((matcher.service, matcher.level))
        if lines is None:
            return
        lo = bisect.bisect_left(lines.stamps, matcher.start)
        hi = bisect.bisect_right(lines.stamps, matcher.end)
        scan.candidates += hi - lo
        rows, terms = lines.rows, matcher.terms
        if len(terms) == 1:
            term = terms[0]
            hits = [i for i in range(lo, hi) if term in rows[i][0]]
        else:
            hits = [i for i in range(lo, hi) if all(t in rows[i][0] for t in terms)]
        data, stamps = self.data, lines.stamps
        # The streaming path only sees lines whose raw bytes pass the prefilter (a keyword written as a \uXXXX escape
        # does not): recheck the lines whose raw bytes and parsed text may differ.
        found = [i for i in hits if rows[i][3] or _prefilter_hit(data[rows[i][1]:rows[i][2]].lower(), matcher)]
        # Matches arrive in ascending (timestamp, line) order: only this file's first `limit` can be kept.
        for position in found[: scan.limit]:
            _, start, end, _ = rows[position]
            scan.record(stamps[position], data[start:end])
        rest = found[scan.limit :]
        if rest:
            scan.count(stamps[rest[0]], stamps[rest[-1]], len(rest))


class _IndexCache:
    """Per-tool cache of file indexes, bounded in file size and total estimated memory; thread-safe."""

    def __init__(self, max_file_bytes: int, max_bytes: int) -> None:
        self.max_file_bytes = max_file_bytes
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._indexes: dict[Path, _FileIndex] = {}
        self._seen: dict[Path, _Signature] = {}
        self._building: dict[Path, threading.Lock] = {}
        self._used = 0

    @property
    def used_bytes(self) -> int:
        return self._used

    def __len__(self) -> int:
        return len(self._indexes)

    def lookup(self, path: Path, signature: _Signature) -> tuple[_FileIndex | None, bool]:
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

    def build(self, path: Path, signature: _Signature) -> _FileIndex | None:
        """Read and index the file (once, however many queries ask at the same time); None when it changed meanwhile."""
        with self._lock:
            building = self._building.setdefault(path, threading.Lock())
        with building:
            with self._lock:
                current = self._indexes.get(path)
                if current is not None and current.signature == signature:  # another query built it meanwhile
                    return current
            with path.open("rb") as handle:
                if _Signature.of(os.fstat(handle.fileno())) != signature:
                    return None
                data = handle.read(signature.size + 1)
            if len(data) != signature.size:
                return None
            index = _FileIndex.build(signature, data)
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


def iter_log_files(root: Path) -> Iterator[Path]:
    """Every *.jsonl file under root (recursively, sorted); root itself when it is a file."""
    if root.is_file():
        yield root
        return
    yield from sorted(p for p in root.rglob("*.jsonl") if p.is_file())


class LogsTool:
    """The query_logs tool over JSON-lines files in a folder."""

    name = ToolName.QUERY_LOGS
    args_model: type[BaseModel] = LogsArgs

    def __init__(
        self,
        path: Path,
        clock: Callable[[], datetime],
        chunk_bytes: int = DEFAULT_CHUNK_BYTES,
        index_max_file_bytes: int = DEFAULT_INDEX_MAX_FILE_BYTES,
        index_max_bytes: int = DEFAULT_INDEX_MAX_BYTES,
    ) -> None:
        self._path = Path(path)
        self._clock = clock
        self._chunk_bytes = max(1, chunk_bytes)
        self._index = _IndexCache(max(0, index_max_file_bytes), max(0, index_max_bytes))

    async def run(self, args: BaseModel) -> RawResult:
        """Search the log files for lines matching the arguments."""
        if not isinstance(args, LogsArgs):
            args = LogsArgs.model_validate(args.model_dump())
        return await asyncio.to_thread(self._run_sync, args)

    def _run_sync(self, args: LogsArgs) -> RawResult:
        if not self._path.exists():
            raise ToolFailure("LOGS_PATH_MISSING", f"The log folder '{self._path.name}' does not exist on the server.")
        start, end = args.window(self._clock())
        if start >= end:
            raise ToolFailure("INVALID_ARGUMENTS", f"start must be before end (end defaults to the clock, {iso_utc(end)}).")
        matcher = LineMatcher.compile(args.service, args.query, args.level, start, end)
        scan = _Scan(matcher=matcher, limit=args.limit)
        files = 0
        unreadable = 0
        scanned_bytes = 0
        listed: set[Path] = set()
        for path in iter_log_files(self._path):
            listed.add(path)
            try:
                scanned_bytes += self._scan_one(path, scan)
                files += 1
            except OSError:
                unreadable += 1
        self._index.retain(listed)
        notes: dict[str, Any] = {
            "files_scanned": files,
            "bytes_scanned": scanned_bytes,
            "candidate_lines": scan.candidates,
            "invalid_lines_skipped": scan.invalid_lines,
            "lines_missing_fields": scan.missing_fields,
            "order": "chronological, earliest matches first",
        }
        if unreadable:
            notes["unreadable_files"] = unreadable
        if scan.first is not None and scan.last is not None:
            notes["first_match"] = iso_utc(scan.first)
            notes["last_match"] = iso_utc(scan.last)
        effective = {
            "service": args.service,
            "query": args.query,
            "level": args.level,
            "start": iso_utc(start),
            "end": iso_utc(end),
            "limit": args.limit,
        }
        return RawResult(items=scan.items(), total_count=scan.total, effective_arguments=effective, notes=notes)

    def _scan_one(self, path: Path, scan: _Scan) -> int:
        """Scan one file through its index when it has (or now gets) one, else by streaming; returns its bytes."""
        if scan.matcher.anchor:  # without a raw anchor every line is a candidate: always stream
            signature = _Signature.of(path.stat())
            index, build = self._index.lookup(path, signature)
            if index is None and build:
                index = self._index.build(path, signature)
            if index is not None:
                index.scan(scan)
                return len(index.data)
        return scan_file(path, scan, self._chunk_bytes)
