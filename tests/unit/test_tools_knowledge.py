"""lookup_knowledge: Markdown blocks, BM25 ranking, hostile query text, rebuild on change, demo runbooks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.errors import ToolFailure
from core.settings import DEMO_DATA
from core.tools.knowledge.args import KnowledgeArgs
from core.tools.knowledge.blocks import split_blocks
from core.tools.knowledge.tool import KnowledgeTool, fts_query


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    (root / "team").mkdir(parents=True)
    (root / "pool.md").write_text(
        "# Connection pool exhaustion\n\nWhen the HikariCP pool is exhausted, requests time out.\n\n"
        "## Mitigation\n\nStop the batch job holding connections.\n\n```\n# not a heading inside code\n```\n",
        encoding="utf-8",
    )
    (root / "team" / "redis.md").write_text(
        "Intro text before any heading.\n\n# Redis latency\n\nEvictions grow when memory is full.\n", encoding="utf-8"
    )
    return root


def test_split_blocks_makes_one_block_per_heading_and_ignores_code_fences() -> None:
    """Each heading starts a block; '#' lines in code fences stay text; a preamble is headed by the doc name."""
    blocks = split_blocks("d.md", "pre\n# A\ntext a\n```\n# code\n```\n## B\ntext b\n")
    assert [(b.heading, b.text) for b in blocks] == [("d.md", "pre"), ("A", "text a\n```\n# code\n```"), ("B", "text b")]


async def test_ranks_the_most_relevant_block_first_with_relative_doc_paths(kb: Path) -> None:
    """The block about the query ranks first; doc is relative to the folder; scores are descending."""
    tool = KnowledgeTool(kb)
    result = await tool.run(KnowledgeArgs(query="redis evictions memory"))
    tool.close()
    assert result.items[0]["doc"] == "team/redis.md"
    assert result.items[0]["heading"] == "Redis latency"
    scores = [item["score"] for item in result.items]
    assert scores == sorted(scores, reverse=True)
    assert result.notes["documents_indexed"] == 2


async def test_partial_matches_rank_because_terms_are_ored(kb: Path) -> None:
    """A query with words absent from the corpus still finds blocks containing some of its words."""
    tool = KnowledgeTool(kb)
    result = await tool.run(KnowledgeArgs(query="hikaricp zebra unicorn", top_k=1))
    tool.close()
    assert [i["heading"] for i in result.items] == ["Connection pool exhaustion"]
    assert result.total_count == 1


@pytest.mark.parametrize(
    "hostile",
    ['"', "pool AND", "OR OR OR", "NEAR(a b", "heading:pool", "* ^ - + ( ) :", "pool\" OR \"x", "NOT", "'; DROP TABLE blocks; --",
     "\x00\x01", "ü*", "a" * 500],
)
async def test_hostile_query_text_never_raises_a_syntax_error(kb: Path, hostile: str) -> None:
    """FTS5 operators, quotes, column filters and control characters in user text are treated as plain words."""
    tool = KnowledgeTool(kb)
    result = await tool.run(KnowledgeArgs(query=hostile))
    again = await tool.run(KnowledgeArgs(query="redis"))
    tool.close()
    assert result.total_count >= 0
    assert again.total_count == 2  # the preamble block (headed by the doc path) and "Redis latency"


def test_fts_query_quotes_words_and_returns_none_without_words() -> None:
    """Words are quoted and OR-ed; punctuation-only text has no query."""
    assert fts_query('pool" NEAR(x)') == '"pool" OR "near" OR "x"'
    assert fts_query("*** ()") is None


async def test_no_words_or_no_match_gives_an_empty_result(kb: Path) -> None:
    """Punctuation-only or unmatched queries return no blocks and a zero count."""
    tool = KnowledgeTool(kb)
    assert (await tool.run(KnowledgeArgs(query="?!"))).total_count == 0
    assert (await tool.run(KnowledgeArgs(query="kubernetes"))).items == []
    tool.close()


async def test_index_is_rebuilt_when_a_file_changes(kb: Path) -> None:
    """Editing or adding a runbook is visible to the next lookup."""
    tool = KnowledgeTool(kb)
    assert (await tool.run(KnowledgeArgs(query="kubernetes"))).total_count == 0
    (kb / "k8s.md").write_text("# Kubernetes OOMKilled\n\nRaise the memory limit.\n", encoding="utf-8")
    assert (await tool.run(KnowledgeArgs(query="kubernetes"))).items[0]["doc"] == "k8s.md"
    pool = kb / "pool.md"
    pool.write_text("# Pool\n\nkubernetes mentioned now\n", encoding="utf-8")
    stat = pool.stat()
    os.utime(pool, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert (await tool.run(KnowledgeArgs(query="kubernetes"))).total_count == 2
    tool.close()


async def test_missing_folder_is_a_clear_failure(tmp_path: Path) -> None:
    """A knowledge folder that does not exist fails with KNOWLEDGE_PATH_MISSING."""
    tool = KnowledgeTool(tmp_path / "none")
    with pytest.raises(ToolFailure) as info:
        await tool.run(KnowledgeArgs(query="x"))
    assert info.value.code == "KNOWLEDGE_PATH_MISSING"


async def test_demo_runbooks_answer_the_hikaricp_question() -> None:
    """On the bundled runbooks, a HikariCP exhaustion question ranks the HikariCP runbook first."""
    tool = KnowledgeTool(DEMO_DATA / "knowledge")
    result = await tool.run(KnowledgeArgs(query="HikariCP connection pool exhausted", top_k=3))
    tool.close()
    assert result.items[0]["doc"] == "runbooks/hikaricp-pool-exhaustion.md"
    assert result.notes["documents_indexed"] >= 6
