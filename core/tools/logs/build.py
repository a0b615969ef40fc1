"""query_logs' backend from the settings: Loki, Elasticsearch/OpenSearch, or the JSONL folder (exactly one)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from core.ports import Tool
from core.settings import Settings
from core.tools.logs.args import LogsArgs
from core.tools.logs.elasticsearch import ElasticsearchLogsTool
from core.tools.logs.jsonl import LogsTool
from core.tools.logs.loki import LokiLogsTool


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
