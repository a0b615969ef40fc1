"""query_logs and lookup_knowledge are bounded in bytes per item and per result, with visible truncation; a huge log
line is never held whole in memory."""

from __future__ import annotations

import json
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

import pytest

from core.evidence.projection import project
from core.tools.item_bounds import TRUNCATED, ItemBounds, json_size
from core.tools.knowledge.args import KnowledgeArgs
from core.tools.knowledge.tool import KnowledgeTool
from core.tools.logs.args import LogsArgs
from core.tools.logs.jsonl import LogsTool
from testkit.tool_names import ToolName

NOW = datetime(2026, 11, 29, 23, 30, tzinfo=UTC)


def _line(message: str, second: int) -> str:
    return json.dumps({"timestamp": f"2026-11-29T23:00:{second:02d}Z", "service": "api", "level": "ERROR",
                       "message": message}) + "\n"


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    folder = tmp_path / "logs" / "api"
    folder.mkdir(parents=True)
    (folder / "2026-11-29.jsonl").write_text(
        _line("boom short", 1) + _line("boom " + "x" * 100_000, 2) + _line("boom " + "y" * 3_000_000, 3)
        + _line("boom again", 4), encoding="utf-8")
    return tmp_path / "logs"


@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "indexed"])
async def test_long_lines_are_cut_and_oversized_lines_skipped_visibly(logs: Path, streaming: bool) -> None:
    """A 100 KB message is cut to the item bound with the marker; a 3 MB line is skipped and counted; the projection
    says truncated."""
    tool = LogsTool(logs, lambda: NOW, chunk_bytes=64 * 1024, index_max_file_bytes=0 if streaming else 64 * 1024 * 1024)
    raw = await tool.run(LogsArgs(service="api", query="boom"))
    messages = [item["message"] for item in raw.items]
    assert messages[0] == "boom short"
    assert messages[1].endswith(TRUNCATED)
    assert json_size(raw.items[1]) <= ItemBounds().item_bytes
    assert messages[-1] == "boom again"
    assert len(raw.items) == 3
    assert raw.notes["bytes_truncated"] is True
    assert raw.notes["oversized_lines_skipped"] == 1
    assert project("c1", ToolName.QUERY_LOGS, raw, None)["truncated"] is True


async def test_a_huge_single_line_file_is_never_held_whole(tmp_path: Path) -> None:
    """Streaming a 24 MB one-line file keeps memory near one chunk plus the line bound, not the line."""
    folder = tmp_path / "logs" / "api"
    folder.mkdir(parents=True)
    (folder / "big.jsonl").write_text(_line("boom " + "z" * 24_000_000, 1), encoding="utf-8")
    tool = LogsTool(tmp_path / "logs", lambda: NOW, chunk_bytes=1024 * 1024, index_max_file_bytes=0)
    tracemalloc.start()
    try:
        raw = await tool.run(LogsArgs(service="api", query="boom"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert raw.items == []
    assert raw.notes["oversized_lines_skipped"] == 1
    assert peak < 8 * 1024 * 1024, peak


async def test_the_logs_result_bound_drops_items_and_says_so(logs: Path) -> None:
    """With a small result bound only the items that fit are kept; the rest are counted as dropped."""
    tool = LogsTool(logs, lambda: NOW, bounds=ItemBounds(item_bytes=2048, result_bytes=2100))
    raw = await tool.run(LogsArgs(service="api", query="boom"))
    assert sum(json_size(i) for i in raw.items) <= 2100
    assert raw.notes["items_dropped_for_size"] >= 1
    assert raw.total_count == 3  # the matches are still counted


async def test_a_huge_runbook_section_is_cut_to_the_block_bound(tmp_path: Path) -> None:
    """A 1 MB runbook section comes back as a bounded block ending with the marker."""
    (tmp_path / "big.md").write_text("# Pool\n\n## Exhaustion\n\n" + "raise the pool size " * 50_000, encoding="utf-8")
    raw = await KnowledgeTool(tmp_path).run(KnowledgeArgs(query="pool exhaustion"))
    assert raw.items
    assert json_size(raw.items[0]) <= ItemBounds().item_bytes
    assert raw.items[0]["text"].endswith(TRUNCATED)
    assert raw.notes["bytes_truncated"] is True
    assert project("c1", ToolName.LOOKUP_KNOWLEDGE, raw, None)["truncated"] is True
