"""The streaming scan of query_logs: big chunks, a raw-bytes prefilter, JSON parsing only for candidate lines.

Each chunk is lowercased once and searched with `bytes.find` for the most selective needle, so only candidate
lines are cut out and parsed (orjson). Matches are kept in a bounded heap: the earliest `limit` of the window.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from core.tools.item_bounds import ItemBounds
from core.tools.logs.query import REQUIRED_FIELDS, LineMatcher

DEFAULT_CHUNK_BYTES = 8 * 1024 * 1024
MAX_LINE_BYTES = ItemBounds().line_bytes


def iso_utc(value: datetime) -> str:
    """ISO-8601 in UTC with a 'Z' suffix (milliseconds only when the time has them)."""
    spec = "milliseconds" if value.microsecond else "seconds"
    return value.astimezone(UTC).isoformat(timespec=spec).replace("+00:00", "Z")


@dataclass
class Scan:
    """Mutable state of one query: bounded heap of the earliest matches plus counters."""

    matcher: LineMatcher
    limit: int
    line_bytes: int = MAX_LINE_BYTES
    """A raw line longer than this is never parsed or kept (counted in `oversized`)."""
    oversized: int = 0
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
        if len(raw) > self.line_bytes:
            self.oversized += 1
            return
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
        if isinstance(line, bytes) and len(line) > self.line_bytes:
            self.oversized += 1  # a match, counted, but too big to keep
            return
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


def scan_block(block: bytes, lo: int, hi: int, scan: Scan) -> None:
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


def scan_file(path: Path, scan: Scan, chunk_bytes: int) -> int:
    """Stream one file through the prefilter; returns the bytes read."""
    read = 0
    carry = b""
    skipping = False  # inside a line longer than scan.line_bytes: dropped, never held whole in memory
    with path.open("rb") as handle:
        while True:
            block = handle.read(chunk_bytes)
            if not block:
                break
            read += len(block)
            first_nl = block.find(b"\n")
            if first_nl == -1:
                carry, skipping = _carry(scan, carry, block, skipping)
                continue
            # The line straddling the previous chunk is scanned on its own, so the big block is never copied.
            if skipping or len(carry) + first_nl + 1 > scan.line_bytes:
                scan.oversized += 1
                skipping = False
            else:
                head = carry + block[: first_nl + 1]
                scan_block(head, 0, len(head), scan)
            last_nl = block.rfind(b"\n")
            scan_block(block, first_nl + 1, last_nl + 1, scan)
            carry = block[last_nl + 1 :]
    if skipping:
        scan.oversized += 1
    elif carry:
        scan_block(carry, 0, len(carry), scan)
    return read


def _carry(scan: Scan, carry: bytes, block: bytes, skipping: bool) -> tuple[bytes, bool]:
    """The unfinished line so far, or (b"", True) once it is longer than the scan keeps."""
    if skipping or len(carry) + len(block) > scan.line_bytes:
        return b"", True
    return carry + block, False


def prefilter_hit(low: bytes, matcher: LineMatcher) -> bool:
    """The streaming prefilter's verdict on one lower-cased raw line (anchor and every needle present)."""
    anchor = matcher.anchor
    return anchor is not None and anchor in low and all(n in low for n in matcher.needles)
