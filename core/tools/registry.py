"""Builds the three read-only tools from the settings (the one place their backends are chosen)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.contracts.evidence import ToolName
from core.ports import Tool
from core.settings import DEMO_CLOCK, DEMO_DATA, Settings
from core.tools.args import LogsArgs
from core.tools.elasticsearch import ElasticsearchLogsTool
from core.tools.knowledge import KnowledgeTool
from core.tools.logs import LogsTool
from core.tools.loki import LokiLogsTool
from core.tools.sql import SqlTool

log = logging.getLogger(__name__)


def reads_demo_logs(settings: Settings) -> bool:
    """True when query_logs reads the bundled demo logs (no Loki/Elasticsearch, DIAG_LOGS_PATH at its default)."""
    if settings.diag_loki_url or settings.diag_es_url:
        return False
    try:
        return Path(settings.diag_logs_path).resolve() == (DEMO_DATA / "logs").resolve()
    except OSError:
        return False


def pinned_clock(settings: Settings) -> datetime | None:
    """The pinned 'now': DIAG_CLOCK when set; over the bundled demo logs without it, the demo's clock (their
    incident is in the past, so the real clock would find nothing in the default window)."""
    if settings.diag_clock is not None:
        return settings.diag_clock
    return DEMO_CLOCK if reads_demo_logs(settings) else None


def clock_from(settings: Settings) -> Callable[[], datetime]:
    """'Now' for default windows: the pinned clock (UTC if naive, see pinned_clock), else the real UTC clock."""
    pinned = pinned_clock(settings)
    if pinned is None:
        return lambda: datetime.now(UTC)
    fixed = pinned if pinned.tzinfo is not None else pinned.replace(tzinfo=UTC)
    return lambda: fixed


def logs_tool(settings: Settings, clock: Callable[[], datetime]) -> Tool[LogsArgs]:
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


def build_tools(settings: Settings) -> dict[ToolName, Tool[Any]]:
    """The tool backends configured by DIAG_LOGS_PATH (or DIAG_LOKI_URL / DIAG_ES_URL), DIAG_KNOWLEDGE_PATH and DIAG_SQL_URL."""
    clock = clock_from(settings)
    pinned = pinned_clock(settings)
    if settings.diag_clock is None and pinned is not None:
        log.warning("DIAG_CLOCK unset over the bundled demo data: 'now' is the demo's clock %s "
                    "(set DIAG_CLOCK to choose another)", pinned.isoformat())
    return {
        ToolName.LOOKUP_KNOWLEDGE: KnowledgeTool(settings.diag_knowledge_path),
        ToolName.QUERY_LOGS: logs_tool(settings, clock),
        ToolName.QUERY_MYSQL: SqlTool(
            settings.diag_sql_url,
            timeout_s=settings.diag_sql_timeout_s,
            row_cap=settings.diag_sql_row_cap,
            # A pinned clock also pins NOW() in SQL, so demo and replay queries see the same "now" as the logs.
            clock=clock if pinned is not None else None,
            schemas=settings.diag_sql_schemas,
            allow_privileged=settings.diag_sql_allow_privileged,
            cell_max_bytes=settings.diag_sql_cell_max_bytes,
            result_max_bytes=settings.diag_sql_result_max_bytes,
        ),
    }
