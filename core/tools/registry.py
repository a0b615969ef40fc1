"""Builds the three read-only tools from the settings (the one place their backends are chosen)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from core.contracts.evidence import ToolName
from core.ports import Tool
from core.settings import Settings
from core.tools.elasticsearch import ElasticsearchLogsTool
from core.tools.knowledge import KnowledgeTool
from core.tools.logs import LogsTool
from core.tools.loki import LokiLogsTool
from core.tools.sql import SqlTool


def clock_from(settings: Settings) -> Callable[[], datetime]:
    """'Now' for default windows: the pinned DIAG_CLOCK when set (UTC if naive), else the real UTC clock."""
    pinned = settings.diag_clock
    if pinned is None:
        return lambda: datetime.now(UTC)
    fixed = pinned if pinned.tzinfo is not None else pinned.replace(tzinfo=UTC)
    return lambda: fixed


def logs_tool(settings: Settings, clock: Callable[[], datetime]) -> Tool:
    """query_logs: Grafana Loki (DIAG_LOKI_URL) or Elasticsearch/OpenSearch (DIAG_ES_URL), else the folder DIAG_LOGS_PATH."""
    if settings.diag_loki_url and settings.diag_es_url:
        raise ValueError(
            "Both DIAG_LOKI_URL and DIAG_ES_URL are set, but query_logs uses exactly one log backend; "
            "unset one of them (Loki or Elasticsearch/OpenSearch)."
        )
    if settings.diag_es_url:
        return ElasticsearchLogsTool(
            settings.diag_es_url,
            clock,
            index=settings.diag_es_index,
            service_field=settings.diag_es_service_field,
            level_field=settings.diag_es_level_field,
            message_field=settings.diag_es_message_field,
            timestamp_field=settings.diag_es_timestamp_field,
            api_key=settings.diag_es_api_key,
            timeout_s=settings.diag_es_timeout_s,
        )
    if settings.diag_loki_url:
        return LokiLogsTool(
            settings.diag_loki_url,
            clock,
            service_label=settings.diag_loki_service_label,
            level_label=settings.diag_loki_level_label,
            tenant=settings.diag_loki_tenant,
            token=settings.diag_loki_token,
            timeout_s=settings.diag_loki_timeout_s,
        )
    return LogsTool(settings.diag_logs_path, clock)


def build_tools(settings: Settings) -> dict[ToolName, Tool]:
    """The tool backends configured by DIAG_LOGS_PATH (or DIAG_LOKI_URL / DIAG_ES_URL), DIAG_KNOWLEDGE_PATH and DIAG_SQL_URL."""
    clock = clock_from(settings)
    return {
        ToolName.LOOKUP_KNOWLEDGE: KnowledgeTool(settings.diag_knowledge_path),
        ToolName.QUERY_LOGS: logs_tool(settings, clock),
        ToolName.QUERY_MYSQL: SqlTool(
            settings.diag_sql_url,
            timeout_s=settings.diag_sql_timeout_s,
            row_cap=settings.diag_sql_row_cap,
            # A pinned clock also pins NOW() in SQL, so demo and replay queries see the same "now" as the logs.
            clock=clock if settings.diag_clock is not None else None,
        ),
    }
