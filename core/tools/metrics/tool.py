"""The query_metrics tool: arguments checked (window, step, PromQL) before the backend runs, then the raw result."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime

from core.contracts.evidence import RawResult
from core.errors import ToolFailure
from core.tools.metrics.args import MetricsArgs, WindowRefused, resolve_window
from core.tools.metrics.backend import BlockingFetch, MetricsBackend
from core.tools.metrics.promql import QueryRefused, check_query, known_check
from core.tools.metrics.result import MAX_SERIES_SHOWN, raw_result

TOOL_NAME = "query_metrics"


class MetricsTool:
    """query_metrics over one backend (embedded OpenMetrics folder or Prometheus)."""

    name = TOOL_NAME
    args_model: type[MetricsArgs] = MetricsArgs

    def __init__(self, backend: MetricsBackend, clock: Callable[[], datetime], max_series: int = MAX_SERIES_SHOWN) -> None:
        self.backend = backend
        self._clock = clock
        self._max_series = max(1, max_series)
        self._blocking = backend if isinstance(backend, BlockingFetch) else None

    async def run(self, args: MetricsArgs) -> RawResult:
        """Check the window and the query, evaluate it, keep the top series by peak."""
        try:
            window = resolve_window(args, self._clock())
        except WindowRefused as exc:
            raise ToolFailure("INVALID_ARGUMENTS", str(exc)) from exc
        try:  # a text not checked before is parsed in a worker thread (~1.5 ms for the first look's ranking)
            known = known_check(args.query)
            query = known if known is not None else await asyncio.to_thread(check_query, args.query)
        except QueryRefused as exc:
            raise ToolFailure(exc.code, exc.message) from exc
        blocking = self._blocking
        if blocking is not None:  # the embedded folder: evaluated and made into the raw result in one thread hop
            return await asyncio.to_thread(
                lambda: raw_result(blocking.fetch_blocking(query, window), query, window, self._max_series))
        fetched = await self.backend.fetch(query, window)
        return await asyncio.to_thread(raw_result, fetched, query, window, self._max_series)

    async def aclose(self) -> None:
        await self.backend.aclose()
