"""The native tools' names, for tests, fixtures and recorded scenarios (the product names them in prompts and
transcripts; the code asks the registry, core/tools/registry.py)."""

from __future__ import annotations

from enum import StrEnum


class ToolName(StrEnum):
    """The three native tools the existing tests and fixtures are written for (query_metrics has its own)."""

    LOOKUP_KNOWLEDGE = "lookup_knowledge"
    QUERY_LOGS = "query_logs"
    QUERY_MYSQL = "query_mysql"
