"""Socket Mode with ack latency: the time from a received envelope to the ack sent back over the socket."""

from __future__ import annotations

import time
from typing import Any

from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest

from core.observability.metrics import Metrics


class MeteredSocketModeHandler(AsyncSocketModeHandler):
    """Bolt's Socket Mode handler; each envelope's handling (Bolt runs the app, then sends the ack) is timed."""

    def __init__(self, *args: Any, metrics: Metrics, **kwargs: Any) -> None:
        self._metrics = metrics
        super().__init__(*args, **kwargs)

    async def handle(self, client: SocketModeClient, req: SocketModeRequest) -> None:  # type: ignore[override]
        """Run the app for the envelope and ack it, observing diagbot_slack_ack_duration_seconds{mode="socket"}."""
        started = time.monotonic()
        try:
            await super().handle(client, req)
        finally:
            self._metrics.slack_ack("socket", time.monotonic() - started)
