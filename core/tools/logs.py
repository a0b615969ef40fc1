"""query_logs over a folder of JSON-lines files: a streaming scan with a raw-bytes prefilter before JSON parsing.

Lines are read in large chunks; each chunk is lowercased once and searched with `bytes.find` for the most
selective needle, so only candidate lines are cut out and parsed (orjson). Matches are returned in
chronological order (oldest first): the first `limit` matches of the window; `total_count` counts them all.
"""

from __future__ import annotations

import asyncio
import heapq
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
from core.tools.log_query import REQUIRED_FIELDS, LineMatcher

DEFAULT_CHUNK_BYTES = 8 * 1024 * 1024


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
    heap: list[tuple[float, int, dict[str, Any]]] = field(default_factory=list)

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
        self.total += 1
        self.seq += 1
        self.first = ts if self.first is None or ts < self.first else self.first
        self.last = ts if self.last is None or ts > self.last else self.last
        # Max-heap (negated keys) holding the `limit` earliest matches.
        entry = (-ts.timestamp(), -self.seq, obj)
        if len(self.heap) < self.limit:
            heapq.heappush(self.heap, entry)
        elif entry > self.heap[0]:
            heapq.heapreplace(self.heap, entry)

    def items(self) -> list[dict[str, Any]]:
        """Matches kept, oldest first."""
        ordered = sorted(self.heap, key=lambda e: (-e[0], -e[1]))
        return [_item(obj) for _, _, obj in ordered]


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

    def __init__(self, path: Path, clock: Callable[[], datetime], chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> None:
        self._path = Path(path)
        self._clock = clock
        self._chunk_bytes = max(1, chunk_bytes)

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
        for path in iter_log_files(self._path):
            try:
                scanned_bytes += scan_file(path, scan, self._chunk_bytes)
                files += 1
            except OSError:
                unreadable += 1
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
