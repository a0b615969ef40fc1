"""The metrics toolset: builds query_metrics from the settings (Prometheus when DIAG_PROMETHEUS_URL is set, else the
OpenMetrics folder DIAG_METRICS_PATH) and checks the backend for `diagbot check` (build info and a sample query)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from core.errors import ToolFailure
from core.health.result import SLOW_CHECK_TIMEOUT_S, Check, CheckResult, Level
from core.health.urls import display_url
from core.settings import Settings
from core.tools.clock import clock_from
from core.tools.contract import PlannedCall, Tool, ToolEnv, ToolSpec
from core.tools.metrics.args import MetricsArgs
from core.tools.metrics.backend import MetricsBackend
from core.tools.metrics.embedded import EmbeddedMetrics
from core.tools.metrics.first_look import metrics_first_look
from core.tools.metrics.prometheus import PrometheusMetrics
from core.tools.metrics.spec import MetricsSpec
from core.tools.metrics.tool import TOOL_NAME, MetricsTool
from core.tools.native import NativeToolAdapter

SUMMARY = MetricsSpec.summary
CHECK_NAME = f"tool.{TOOL_NAME}"


def backend_from(settings: Settings) -> MetricsBackend:
    """Prometheus (DIAG_PROMETHEUS_URL) or the embedded folder (DIAG_METRICS_PATH); ValueError for a bad URL."""
    if settings.diag_prometheus_url:
        return PrometheusMetrics(settings.diag_prometheus_url, settings.diag_prometheus_token,
                                 settings.diag_prometheus_timeout_s)
    return EmbeddedMetrics(Path(settings.diag_metrics_path))


def metrics_tool(settings: Settings, env: ToolEnv) -> MetricsTool:
    """The configured backend behind the tool; it is closed with the services."""
    tool = MetricsTool(backend_from(settings), env.clock)
    env.stack.push_async_callback(tool.aclose)
    return tool


class MetricsToolset:
    """query_metrics."""

    name = "metrics"
    specs: Sequence[ToolSpec] = (MetricsSpec(),)

    async def build(self, settings: Settings, env: ToolEnv) -> Sequence[Tool[Any]]:
        return (NativeToolAdapter(metrics_tool(settings, env), SUMMARY),)

    def checks(self, settings: Settings, *, readiness: bool) -> Sequence[Check]:
        async def run() -> CheckResult:
            return await probe(settings, sample=not readiness)

        # its own bound: the embedded backend parses the whole folder (in a thread), seconds on a loaded machine
        return (Check(CHECK_NAME, run, failing=Level.WARN, timeout_s=SLOW_CHECK_TIMEOUT_S,
                      fix="check DIAG_PROMETHEUS_URL / DIAG_PROMETHEUS_TOKEN, or DIAG_METRICS_PATH"),)

    def first_look(self, service: str | None, start: datetime, end: datetime) -> Sequence[PlannedCall]:
        """The series of the service that moved most in the window against the time before it (first_look.py)."""
        return metrics_first_look(service, start, end)


async def probe(settings: Settings, now: datetime | None = None, *, sample: bool = True) -> CheckResult:
    """Prometheus: build info, then (`sample`) a sample query, `count(up)`; embedded: the folder parses and lists
    series. Readiness asks without the sample query."""
    backend = backend_from(settings)
    try:
        if isinstance(backend, PrometheusMetrics):
            return await _probe_prometheus(backend, settings, sample)
        return await _probe_folder(backend, settings, now)
    except ToolFailure as exc:
        where = (f"DIAG_PROMETHEUS_URL {display_url(settings.diag_prometheus_url or '')}" if settings.diag_prometheus_url
                 else f"DIAG_METRICS_PATH {settings.diag_metrics_path}")
        return CheckResult(name=CHECK_NAME, level=Level.WARN, detail=f"{where}: {exc.message}",
                           fix="check the metrics backend's URL, credentials and reachability (or the folder)")
    finally:
        await backend.aclose()


async def _probe_prometheus(backend: PrometheusMetrics, settings: Settings, sample: bool) -> CheckResult:
    info = await backend.build_info()
    version = str(info.get("version") or "unknown version")
    shown = display_url(settings.diag_prometheus_url or "")
    if not sample:
        return CheckResult(name=CHECK_NAME, level=Level.OK, detail=f"DIAG_PROMETHEUS_URL {shown}: Prometheus {version}")
    tool = MetricsTool(backend, clock_from(settings))
    raw = await tool.run(MetricsArgs(query="count(up)", instant=True))
    targets = raw.items[0]["last"]["v"] if raw.items and "last" in raw.items[0] else "no series (no target up then)"
    return CheckResult(name=CHECK_NAME, level=Level.OK,
                       detail=f"DIAG_PROMETHEUS_URL {shown}: Prometheus {version}, count(up) = {targets}")


async def _probe_folder(backend: MetricsBackend, settings: Settings, now: datetime | None) -> CheckResult:
    assert isinstance(backend, EmbeddedMetrics)
    snapshot = await asyncio.to_thread(backend.folder.snapshot)
    folder = settings.diag_metrics_path
    if not snapshot.series:
        return CheckResult(name=CHECK_NAME, level=Level.WARN, detail=f"DIAG_METRICS_PATH {folder} has no series",
                           fix="put OpenMetrics *.om files with timestamps there, or set DIAG_PROMETHEUS_URL")
    names = len({s.name for s in snapshot.series})
    last = max(s.times[-1] for s in snapshot.series if len(s))
    detail = (f"DIAG_METRICS_PATH {folder}: {snapshot.files} files, {len(snapshot.series)} series of {names} metrics, "
              f"samples up to {datetime.fromtimestamp(last, UTC).isoformat().replace('+00:00', 'Z')}")
    if snapshot.unreadable:
        return CheckResult(name=CHECK_NAME, level=Level.WARN, detail=detail + f"; unreadable: {snapshot.unreadable[:3]}",
                           fix="fix or remove the files that are not valid OpenMetrics")
    if now is not None and now - datetime.fromtimestamp(last, UTC) > timedelta(days=1):
        detail += " (older than a day: pin DIAG_CLOCK to query them)"
    return CheckResult(name=CHECK_NAME, level=Level.OK, detail=detail)
