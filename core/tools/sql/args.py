"""Arguments of query_mysql (SPEC §3): one read-only statement in MySQL syntax."""

from __future__ import annotations

from typing import Final

from pydantic import Field

from core.tools.native import ToolArgs

NAME: Final = "query_mysql"
"""The tool's name: part of the product's interface (SPEC §3), in prompts, transcripts and tests."""


class SqlArgs(ToolArgs):
    """Arguments of query_mysql: one read-only statement in MySQL syntax."""

    sql: str = Field(
        min_length=1,
        max_length=20_000,
        description="Exactly one SELECT (or WITH...SELECT, UNION, SHOW, DESCRIBE, EXPLAIN) statement, MySQL dialect.",
    )
