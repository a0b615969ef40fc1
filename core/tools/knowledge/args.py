"""Arguments of lookup_knowledge (SPEC §3): ranked retrieval over the Markdown runbooks."""

from __future__ import annotations

from typing import Final

from pydantic import Field

from core.tools.native import ToolArgs

NAME: Final = "lookup_knowledge"
"""The tool's name: part of the product's interface (SPEC §3), in prompts, transcripts and tests."""


class KnowledgeArgs(ToolArgs):
    """Arguments of lookup_knowledge: ranked retrieval over the Markdown runbooks."""

    query: str = Field(
        min_length=1, max_length=500, description="What to look up, in plain words (e.g. 'HikariCP pool exhausted')."
    )
    top_k: int = Field(default=5, ge=1, le=10, description="How many runbook sections to return (1-10).")
