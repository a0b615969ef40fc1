"""Slack-side metrics: Web API errors and retries by method, ack latency, and the GET /metrics route."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from aiohttp import web
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from core.observability.metrics import CONTENT_TYPE, Metrics

METRICS_PATH = "/metrics"


def slack_error_label(exc: BaseException) -> str:
    """Slack's error code when the body was JSON, else `http_<status>`, else the exception type (never the body)."""
    if isinstance(exc, SlackApiError):
        data = getattr(exc.response, "data", None)
        if isinstance(data, dict) and isinstance(data.get("error"), str):
            return str(data["error"])
        return f"http_{getattr(exc.response, 'status_code', 'unknown')}"
    return type(exc).__name__


class MeteredWebClient(AsyncWebClient):
    """AsyncWebClient that counts every failed Web API call (after the SDK's retries) by method and error."""

    def __init__(self, *args: Any, metrics: Metrics, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.metrics = metrics

    async def api_call(self, api_method: str, **kwargs: Any) -> AsyncSlackResponse:
        """The SDK's api_call; a raised SlackApiError or network error is counted, then re-raised unchanged."""
        try:
            return await super().api_call(api_method, **kwargs)
        except (TimeoutError, SlackApiError, aiohttp.ClientError, OSError) as exc:
            self.metrics.slack_api_error(api_method, slack_error_label(exc))
            raise


class CountingRetryHandler(AsyncRetryHandler):
    """Wraps one of the SDK's retry handlers; each retry it grants is counted under the call's method and `reason`."""

    def __init__(self, inner: AsyncRetryHandler, reason: str, metrics: Metrics) -> None:
        super().__init__(inner.max_retry_count, inner.interval_calculator)
        self._inner = inner
        self._reason = reason
        self._metrics = metrics

    async def can_retry_async(self, *, state: RetryState, request: HttpRequest, response: HttpResponse | None = None,
                              error: Exception | None = None) -> bool:
        """The wrapped handler's decision."""
        return await self._inner.can_retry_async(state=state, request=request, response=response, error=error)

    async def prepare_for_next_attempt_async(self, *, state: RetryState, request: HttpRequest,
                                             response: HttpResponse | None = None, error: Exception | None = None) -> None:
        """Count the retry, then wait as the wrapped handler does (Retry-After for 429)."""
        self._metrics.slack_api_retry(urlsplit(request.url).path.rsplit("/", 1)[-1], self._reason)
        await self._inner.prepare_for_next_attempt_async(state=state, request=request, response=response, error=error)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def ack_timer(metrics: Metrics, path: str) -> Any:
    """aiohttp middleware: the time each request to `path` takes to be answered (Bolt answers with the ack)."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path != path:
            return await handler(request)
        started = time.monotonic()
        try:
            return await handler(request)
        finally:
            metrics.slack_ack("http", time.monotonic() - started)

    return middleware


def add_metrics_route(web_app: web.Application, metrics: Metrics) -> None:
    """GET /metrics: the Prometheus text exposition of this process's registry."""

    async def handle(_: web.Request) -> web.Response:
        body = metrics.render()
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})

    web_app.router.add_get(METRICS_PATH, handle)
