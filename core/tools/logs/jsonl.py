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
import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from core.contracts.evidence import RawResult
from core.errors import ToolFailure
from core.tools.item_bounds import ItemBounds, bound_items
from core.tools.logs.args import LogsArgs
from core.tools.logs.backend import QueryLogsTool, checked_window, effective_arguments
from core.tools.logs.index import DEFAULT_INDEX_MAX_BYTES, DEFAULT_INDEX_MAX_FILE_BYTES, FileSignature, IndexCache
from core.tools.logs.query import LineMatcher
from core.tools.logs.scan import DEFAULT_CHUNK_BYTES, Scan, iso_utc, scan_file
from core.tools.walk import KeptListing


class LogsTool(QueryLogsTool):
    """The query_logs tool over JSON-lines files in a folder."""

    def __init__(
        self,
        path: Path,
        clock: Callable[[], datetime],
        chunk_bytes: int = DEFAULT_CHUNK_BYTES,
        index_max_file_bytes: int = DEFAULT_INDEX_MAX_FILE_BYTES,
        index_max_bytes: int = DEFAULT_INDEX_MAX_BYTES,
        bounds: ItemBounds | None = None,
    ) -> None:
        self._bounds = bounds or ItemBounds()
        self._path = Path(path)
        self._clock = clock
        self._chunk_bytes = max(1, chunk_bytes)
        self._index = IndexCache(max(0, index_max_file_bytes), max(0, index_max_bytes))
        self._listing = KeptListing(self._path, ".jsonl")

    async def run(self, args: LogsArgs) -> RawResult:
        """Search the log files for lines matching the arguments."""
        return await asyncio.to_thread(self._run_sync, args)

    def _run_sync(self, args: LogsArgs) -> RawResult:
        if not self._path.exists():
            raise ToolFailure("LOGS_PATH_MISSING", f"The log folder '{self._path.name}' does not exist on the server.")
        start, end = checked_window(args, self._clock())
        matcher = LineMatcher.compile(args.service, args.query, args.level, start, end)
        scan = Scan(matcher=matcher, limit=args.limit, line_bytes=self._bounds.line_bytes)
        files = 0
        unreadable = 0
        scanned_bytes = 0
        listed: set[Path] = set()
        for path, stat in self._listing.files():
            listed.add(path)
            try:
                scanned_bytes += self._scan_one(path, scan, stat)
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
        items, cut = bound_items(scan.items(), self._bounds)
        notes.update(cut)
        if scan.oversized:
            notes.update(bytes_truncated=True, oversized_lines_skipped=scan.oversized, line_bytes_max=scan.line_bytes)
        return RawResult(items=items, total_count=scan.total, effective_arguments=effective_arguments(args, start, end),
                         notes=notes)

    def _scan_one(self, path: Path, scan: Scan, stat: os.stat_result) -> int:
        """Scan one file through its index when it has (or now gets) one, else by streaming; returns its bytes.
        `stat`: the file's, taken when it was listed."""
        if scan.matcher.anchor:  # without a raw anchor every line is a candidate: always stream
            signature = FileSignature.of(stat)
            index, build = self._index.lookup(path, signature)
            if index is None and build:
                index = self._index.build(path, signature)
            if index is not None:
                index.scan(scan)
                return len(index.data)
        return scan_file(path, scan, self._chunk_bytes)
