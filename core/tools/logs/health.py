"""query_logs' checks: one log backend chosen, and that backend answers (Loki / Elasticsearch) or holds files."""

from __future__ import annotations

from datetime import timedelta

from core.errors import ToolFailure
from core.health.result import CheckResult, Level
from core.health.urls import display_url
from core.settings import Settings
from core.tools.checks import check_folder
from core.tools.clock import clock_from
from core.tools.logs.args import LogsArgs
from core.tools.logs.build import logs_tool


def check_log_backend_choice(settings: Settings) -> CheckResult:
    """At most one of DIAG_LOKI_URL and DIAG_ES_URL."""
    if settings.diag_loki_url and settings.diag_es_url:
        return CheckResult(name="tool.query_logs.backend", level=Level.FATAL,
                           detail="both DIAG_LOKI_URL and DIAG_ES_URL are set; query_logs uses exactly one backend",
                           fix="unset DIAG_LOKI_URL or DIAG_ES_URL")
    backend = "Loki" if settings.diag_loki_url else "Elasticsearch" if settings.diag_es_url else "the JSONL folder"
    return CheckResult(name="tool.query_logs.backend", level=Level.OK, detail=f"query_logs reads {backend}")


async def check_log_service(settings: Settings) -> CheckResult:
    """Loki or Elasticsearch answers one small query through the real tool (auth, tenant and index included)."""
    setting = "DIAG_LOKI_URL" if settings.diag_loki_url else "DIAG_ES_URL"
    shown = display_url(settings.diag_loki_url or settings.diag_es_url or "")
    tool = logs_tool(settings, clock_from(settings))
    end = clock_from(settings)()
    try:
        await tool.run(LogsArgs(service="diagbot-check", query="diagbot-check", start=end - timedelta(minutes=1),
                                end=end, limit=1))
    except ToolFailure as exc:
        return CheckResult(name="tool.query_logs", level=Level.WARN, detail=f"{setting} {shown}: {exc.message}",
                           fix=f"check {setting} (and its credentials) and that the service is reachable from here")
    finally:
        close = getattr(tool, "aclose", None)
        if close is not None:
            await close()
    return CheckResult(name="tool.query_logs", level=Level.OK, detail=f"{setting} {shown} answers a query")


async def check_logs(settings: Settings) -> CheckResult:
    """query_logs' backend: the service when configured, else the JSONL folder."""
    if settings.diag_loki_url and settings.diag_es_url:
        return CheckResult(name="tool.query_logs", level=Level.SKIP, detail="two log backends set (see above)")
    if settings.diag_loki_url or settings.diag_es_url:
        return await check_log_service(settings)
    return await check_folder("tool.query_logs", "DIAG_LOGS_PATH", settings.diag_logs_path, "*.jsonl")
