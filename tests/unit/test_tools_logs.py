"""query_logs: matching rules, malformed lines, chunk boundaries, ordering, limits and failures."""

from __future__ import annotations

import asyncio
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from core.errors import ToolFailure
from core.settings import DEMO_CLOCK, DEMO_DATA
from core.tools.logs.args import LogsArgs
from core.tools.logs.jsonl import LogsTool
from core.tools.logs.query import parse_terms

NOW = datetime(2026, 11, 29, 23, 30, tzinfo=UTC)


def _line(ts: str, service: str, level: str, message: str, ensure: bool = False, **extra: Any) -> str:
    return json.dumps({"timestamp": ts, "service": service, "level": level, "message": message, **extra},
                      ensure_ascii=not ensure)


def _write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


@pytest.fixture
def logs_dir(tmp_path: Path) -> Path:
    root = tmp_path / "logs"
    _write(root / "a" / "order.jsonl", [
        _line("2026-11-29T23:10:00Z", "order-service", "ERROR", "HikariPool-1 - Connection is not available", pod="p1"),
        _line("2026-11-29T23:05:00Z", "order-service", "WARN", "Connection pool nearly full"),
        _line("2026-11-29T22:00:00Z", "order-service", "ERROR", "Connection is not available (too old)"),
        _line("2026-11-29T23:20:00Z", "Order-Service", "ERROR", "connection IS NOT available again"),
        '{"timestamp": "2026-11-29T23:11:00Z", "service": "order-service", "message": "Connection is not av',
        "not json at all order-service connection",
        _line("2026-11-29T23:12:00Z", "payment-service", "ERROR", "Connection is not available"),
    ])
    _write(root / "b" / "deep" / "more.jsonl", [
        _line("2026-11-29T23:01:00+00:00", "order-service", "ERROR", "Timeout: connection is not available", trace="t"),
        json.dumps({"timestamp": "2026-11-29T23:02:00Z", "service": "order-service", "message": "connection without level"}),
        json.dumps(["order-service", "connection"]),
    ])
    (root / "ignored.log").write_text(_line("2026-11-29T23:15:00Z", "order-service", "ERROR", "connection") + "\n")
    return root


async def _run(root: Path, chunk: int = 8 * 1024 * 1024, **kwargs: Any) -> Any:
    return await LogsTool(root, lambda: NOW, chunk_bytes=chunk).run(LogsArgs(**kwargs))


async def test_keywords_must_all_appear_case_insensitively(logs_dir: Path) -> None:
    """Every keyword must be in the message; service matches exactly, ignoring case; only *.jsonl are read."""
    result = await _run(logs_dir, service="ORDER-service", query="connection AVAILABLE")
    messages = [item["message"] for item in result.items]
    assert messages == [
        "Timeout: connection is not available",
        "HikariPool-1 - Connection is not available",
        "connection IS NOT available again",
    ]
    assert result.total_count == 3
    assert result.notes["files_scanned"] == 2


async def test_quoted_phrase_matches_the_exact_phrase_only(logs_dir: Path) -> None:
    """A quoted phrase must appear as a whole; 'Connection pool nearly full' does not match 'connection is'."""
    result = await _run(logs_dir, service="order-service", query='"connection is not"')
    assert result.total_count == 3
    assert all("connection is not" in item["message"].lower() for item in result.items)


async def test_level_and_window_filter(logs_dir: Path) -> None:
    """level keeps only that level; lines outside [start, end] are excluded."""
    result = await _run(logs_dir, service="order-service", query="connection", level="WARN")
    assert [i["message"] for i in result.items] == ["Connection pool nearly full"]
    windowed = await _run(logs_dir, service="order-service", query="connection", start="2026-11-29T21:00:00Z",
                          end="2026-11-29T22:30:00Z")
    assert [i["message"] for i in windowed.items] == ["Connection is not available (too old)"]


async def test_malformed_and_incomplete_lines_are_skipped_and_counted(logs_dir: Path) -> None:
    """Invalid JSON (and non-object JSON) is counted, lines without required fields are counted, none is fatal."""
    result = await _run(logs_dir, service="order-service", query="connection")
    assert result.notes["invalid_lines_skipped"] == 3
    assert result.notes["lines_missing_fields"] == 1
    assert result.total_count == 4


async def test_items_carry_extra_fields_and_effective_arguments_resolve_the_window(logs_dir: Path) -> None:
    """Other fields are kept on items; effective arguments hold the resolved ISO window, limit and level."""
    result = await _run(logs_dir, service="order-service", query="hikaripool")
    assert result.items[0]["pod"] == "p1"
    assert result.items[0]["timestamp"] == "2026-11-29T23:10:00Z"
    assert result.effective_arguments == {
        "service": "order-service", "query": "hikaripool", "level": None,
        "start": "2026-11-29T22:30:00Z", "end": "2026-11-29T23:30:00Z", "limit": 20,
    }


async def test_limit_keeps_the_earliest_matches_in_order_and_counts_all(tmp_path: Path) -> None:
    """With more matches than the limit, the earliest `limit` are returned oldest first and total_count has all."""
    lines = [_line(f"2026-11-29T23:{m:02d}:00Z", "svc", "ERROR", f"boom {m}") for m in range(29, -1, -1)]
    _write(tmp_path / "x.jsonl", lines)
    result = await _run(tmp_path, service="svc", query="boom", limit=5)
    assert [i["message"] for i in result.items] == [f"boom {m}" for m in range(5)]
    assert result.total_count == 30
    assert result.notes["first_match"] == "2026-11-29T23:00:00Z"
    assert result.notes["last_match"] == "2026-11-29T23:29:00Z"


@pytest.mark.parametrize("chunk", [1, 7, 64, 1000])
async def test_results_do_not_depend_on_chunk_boundaries(logs_dir: Path, chunk: int) -> None:
    """Tiny read chunks (lines split across reads) give the same answer as one big read."""
    expected = await _run(logs_dir, service="order-service", query="connection")
    got = await _run(logs_dir, chunk=chunk, service="order-service", query="connection")
    assert got.items == expected.items
    assert got.total_count == expected.total_count
    assert got.notes["invalid_lines_skipped"] == expected.notes["invalid_lines_skipped"]


async def test_terms_that_json_may_escape_are_checked_after_parsing(tmp_path: Path) -> None:
    """Non-ASCII and slash terms still match although the raw line escapes them."""
    _write(tmp_path / "x.jsonl", [json.dumps({"timestamp": "2026-11-29T23:00:00Z", "service": "café-svc", "level": "INFO",
                                              "message": "GET /api/ümlaut ok"})])
    result = await _run(tmp_path, service="CAFÉ-svc", query="/api/ümlaut")
    assert result.total_count == 1


async def test_no_match_is_an_empty_result_not_an_error(logs_dir: Path) -> None:
    """A query that matches nothing returns zero items and zero count."""
    result = await _run(logs_dir, service="order-service", query="deadlock")
    assert result.items == []
    assert result.total_count == 0


async def test_missing_folder_is_a_clear_failure(tmp_path: Path) -> None:
    """A log folder that does not exist fails with LOGS_PATH_MISSING."""
    with pytest.raises(ToolFailure) as info:
        await _run(tmp_path / "nope", service="s", query="q")
    assert info.value.code == "LOGS_PATH_MISSING"


async def test_query_without_terms_is_invalid(tmp_path: Path) -> None:
    """A query made only of empty quotes has no terms and is rejected."""
    with pytest.raises(ToolFailure) as info:
        await _run(tmp_path, service="s", query='""')
    assert info.value.code == "INVALID_ARGUMENTS"


async def test_start_after_the_clock_moves_end_past_start(tmp_path: Path) -> None:
    """Only a start after the clock: the window is the 60 minutes after start, not an inverted one."""
    _write(tmp_path / "x.jsonl", [_line("2026-11-30T00:10:00Z", "s", "INFO", "late line")])
    result = await _run(tmp_path, service="s", query="late", start="2026-11-30T00:00:00Z")
    assert result.effective_arguments["end"] == "2026-11-30T01:00:00Z"
    assert result.total_count == 1


def test_parse_terms_splits_words_and_quoted_phrases() -> None:
    """Words become keywords, quoted text one phrase, all lowercased and de-duplicated."""
    assert parse_terms('Timeout "Connection is not" timeout  x') == ["timeout", "connection is not", "x"]


# ---- in-memory index of unchanged small files -------------------------------------------------------------------

QUERIES: list[dict[str, Any]] = [
    {"service": "order-service", "query": "connection"},
    {"service": "order-service", "query": "connection available", "level": "ERROR"},
    {"service": "ORDER-service", "query": '"connection is not"', "limit": 2},
    {"service": "order-service", "query": "key"},
    {"service": "order-service", "query": "took>500ms"},
    {"service": "123", "query": "boot"},
    {"service": "café-svc", "query": "/api/ümlaut"},
    {"service": "order-service", "query": "tie", "limit": 3},
    {"service": "order-service", "query": "connection", "start": "2026-11-29T21:00:00Z", "end": "2026-11-29T23:05:00Z"},
    {"service": "payment-service", "query": "nothing-here"},
    {"service": "order-service", "query": "*"},  # every line (the first look's calls): no term to test
    {"service": "order-service", "query": "*", "level": "ERROR", "limit": 2},
    {"service": "café-svc", "query": "*", "level": "WARN"},
]


@pytest.fixture
def tricky_dir(logs_dir: Path) -> Path:
    """The fixture plus lines where raw bytes and parsed text differ, CRLF endings, ties and odd field types."""
    lines = [
        # The keyword only as a \\u escape: the raw prefilter never sees it, so neither path may report it.
        '{"timestamp": "2026-11-29T23:03:00Z", "service": "order-service", "level": "ERROR", '
        '"message": "took\\u003e500ms connection"}',
        _line("2026-11-29T23:04:00Z", "order-service", "ERROR", "took>500ms raw connection"),
        # KELVIN SIGN lower-cases to an ASCII 'k': 'Key' in the parsed message, not in the raw bytes.
        _line("2026-11-29T23:06:00Z", "order-service", "INFO", "\u212aey rotated", ensure=True),
        _line("2026-11-29T23:07:00Z", "order-service", "INFO", "key rotated"),
        json.dumps({"timestamp": "2026-11-29T23:08:00Z", "service": 123, "level": "INFO", "message": "boot ok"}),
        json.dumps({"timestamp": "2026-11-29T23:09:00Z", "service": 1.23e2, "level": "INFO", "message": "boot float"}),
        _line("2026-11-29T23:13:00Z", "order-service", "WARNING", "tie b connection"),
        _line("2026-11-29T23:13:00Z", "order-service", "WARN", "tie a connection"),
        _line("2026-11-29T23:13:00+00:30", "order-service", "warn", "tie early connection"),
        _line("not a time", "order-service", "ERROR", "connection with a bad timestamp"),
        json.dumps({"timestamp": "2026-11-29T23:14:00Z", "service": "order-service", "level": "INFO",
                    "message": ["connection", "as a list"]}),
        "",
        "   ",
    ]
    root = logs_dir
    (root / "c").mkdir()
    (root / "c" / "tricky.jsonl").write_bytes("".join(line + "\r\n" for line in lines).encode())
    _write(root / "c" / "ties.jsonl", [_line("2026-11-29T23:13:00Z", "order-service", "ERROR", "tie c connection")])
    return root


def _same(a: Any, b: Any) -> None:
    assert a.items == b.items
    assert a.total_count == b.total_count
    keys = ("files_scanned", "bytes_scanned", "invalid_lines_skipped", "lines_missing_fields", "first_match", "last_match")
    assert {k: a.notes.get(k) for k in keys} == {k: b.notes.get(k) for k in keys}


async def test_indexed_answers_equal_streamed_answers(tricky_dir: Path) -> None:
    """Once a file is indexed, every query returns exactly what the streaming scan returns (items, order, counters)."""
    streaming = LogsTool(tricky_dir, lambda: NOW, index_max_file_bytes=0)
    cached = LogsTool(tricky_dir, lambda: NOW)
    for chunk in (7, 8 * 1024 * 1024):
        small_chunks = LogsTool(tricky_dir, lambda: NOW, chunk_bytes=chunk, index_max_file_bytes=0)
        for kwargs in QUERIES:
            expected = await streaming.run(LogsArgs(**kwargs))
            _same(await small_chunks.run(LogsArgs(**kwargs)), expected)
            # first sight streams, the second builds the index, the third uses it, the fourth keeps the lines
            # holding its terms, the fifth bisects those
            for _ in range(5):
                _same(await cached.run(LogsArgs(**kwargs)), expected)
    assert len(cached._index) == 4
    assert len(streaming._index) == 0


async def test_kept_term_lines_answer_other_windows_like_the_stream(tricky_dir: Path) -> None:
    """The lines an index keeps for a query's terms serve the same terms over any window (and level) exactly as
    the streaming scan answers them."""
    streaming = LogsTool(tricky_dir, lambda: NOW, index_max_file_bytes=0)
    cached = LogsTool(tricky_dir, lambda: NOW)
    windows = [("2026-11-29T21:00:00Z", "2026-11-29T23:05:00Z"), ("2026-11-29T23:04:00Z", "2026-11-29T23:13:00Z"),
               ("2026-11-29T23:13:00Z", "2026-11-29T23:59:00Z"), ("2026-11-29T20:00:00Z", "2026-11-29T20:30:00Z")]
    for query in ("connection", "tie connection", '"raw connection"', "took>500ms"):
        for level in (None, "ERROR", "WARN"):
            for _ in range(3):
                for start, end in windows:
                    args = LogsArgs(service="order-service", query=query, level=level, start=start, end=end, limit=2)
                    _same(await cached.run(args), await streaming.run(args))
    assert any(index._hits for index in cached._index._indexes.values())  # the kept lines were used


async def test_escaped_keyword_and_kelvin_sign_behave_like_the_stream(tricky_dir: Path) -> None:
    """The concrete answers the equivalence rests on: raw-invisible terms are not reported by either path."""
    tool = LogsTool(tricky_dir, lambda: NOW)
    for _ in range(3):
        took = await tool.run(LogsArgs(service="order-service", query="took>500ms"))
        assert [i["message"] for i in took.items] == ["took>500ms raw connection"]
        key = await tool.run(LogsArgs(service="order-service", query="key"))
        assert [i["message"] for i in key.items] == ["key rotated"]
        ties = await tool.run(LogsArgs(service="order-service", query="tie", limit=3))
        assert [i["message"] for i in ties.items] == ["tie early connection", "tie c connection", "tie b connection"]
        assert ties.total_count == 4


async def test_index_follows_file_changes(tmp_path: Path) -> None:
    """Appending, rewriting (same size, new mtime) and deleting files are seen by the very next query."""
    path = tmp_path / "x.jsonl"
    _write(path, [_line("2026-11-29T23:00:00Z", "svc", "ERROR", "boom one")])
    tool = LogsTool(tmp_path, lambda: NOW)
    for _ in range(3):
        assert (await tool.run(LogsArgs(service="svc", query="boom"))).total_count == 1
    assert len(tool._index) == 1
    with path.open("a", encoding="utf-8") as handle:
        handle.write(_line("2026-11-29T23:01:00Z", "svc", "ERROR", "boom two") + "\n")
    result = await tool.run(LogsArgs(service="svc", query="boom"))
    assert [i["message"] for i in result.items] == ["boom one", "boom two"]
    assert len(tool._index) == 0  # the stale index is dropped at once, rebuilt on the next unchanged sight
    stat = path.stat()
    path.write_text(path.read_text().replace("boom one", "bang one"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    for _ in range(3):
        result = await tool.run(LogsArgs(service="svc", query="boom"))
        assert [i["message"] for i in result.items] == ["boom two"]
    assert len(tool._index) == 1
    path.unlink()
    _write(tmp_path / "y.jsonl", [_line("2026-11-29T23:02:00Z", "svc", "ERROR", "boom three")])
    result = await tool.run(LogsArgs(service="svc", query="boom"))
    assert [i["message"] for i in result.items] == ["boom three"]
    assert len(tool._index) == 0
    assert tool._index.used_bytes == 0


async def test_index_memory_is_bounded(tmp_path: Path) -> None:
    """Files above the per-file cap, or beyond the total budget, are streamed and never kept."""
    for name in ("a", "b", "c"):
        _write(tmp_path / f"{name}.jsonl", [_line("2026-11-29T23:00:00Z", "svc", "ERROR", f"boom {name} " + "x" * 200)] * 20)
    size = (tmp_path / "a.jsonl").stat().st_size
    too_big = LogsTool(tmp_path, lambda: NOW, index_max_file_bytes=size - 1)
    budget = LogsTool(tmp_path, lambda: NOW, index_max_bytes=2 * size + 20 * 600)
    for _ in range(3):
        assert (await too_big.run(LogsArgs(service="svc", query="boom"))).total_count == 60
        assert (await budget.run(LogsArgs(service="svc", query="boom"))).total_count == 60
    assert len(too_big._index) == 0
    assert len(budget._index) < 3
    assert budget._index.used_bytes <= 2 * size + 20 * 600


async def test_concurrent_queries_share_one_index(tricky_dir: Path) -> None:
    """Queries running at once in worker threads agree with the stream and leave one index per file."""
    expected = await LogsTool(tricky_dir, lambda: NOW, index_max_file_bytes=0).run(LogsArgs(service="order-service",
                                                                                             query="connection"))
    tool = LogsTool(tricky_dir, lambda: NOW)
    await tool.run(LogsArgs(service="order-service", query="connection"))
    results = await asyncio.gather(*(tool.run(LogsArgs(service="order-service", query="connection")) for _ in range(20)))
    for result in results:
        _same(result, expected)
    assert len(tool._index) == 4


async def test_star_alone_matches_every_line_of_the_level() -> None:
    """`*` alone is every line of the service and level in the window (the first look's error lines); the count
    covers them all and a `*` beside words stays a literal term."""
    tool = LogsTool(DEMO_DATA / "logs", lambda: DEMO_CLOCK)
    every = await tool.run(LogsArgs(service="order-service", query="*", level="ERROR", limit=5))
    pool = await tool.run(LogsArgs(service="order-service", query="Connection is not available", level="ERROR", limit=5))
    assert every.total_count >= pool.total_count > 0
    assert len(every.items) == 5
    assert all(item["level"] == "ERROR" for item in every.items)
    literal = await tool.run(LogsArgs(service="order-service", query="* available", level="ERROR"))
    assert literal.total_count == 0
