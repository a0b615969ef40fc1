"""Listeners of last resort: an event, action, command, view, shortcut or options request no other listener
handles is acknowledged and ignored (Bolt would answer 404, and Slack retries a 404). Registered last."""

from __future__ import annotations

import logging
import re
from typing import Any

from slack_bolt.async_app import AsyncApp

log = logging.getLogger(__name__)
_ANY = re.compile(".*")


async def _ignore_event(body: dict[str, Any]) -> None:
    event = body.get("event")
    log.debug("ignored event %s", event.get("type") if isinstance(event, dict) else "?")


async def _ack_and_ignore(ack: Any) -> None:
    await ack()


def register_unhandled(app: AsyncApp) -> None:
    """Acknowledge what no listener registered before handles."""
    app.event(_ANY)(_ignore_event)
    for register in (app.action, app.command, app.view, app.shortcut, app.options):
        register(_ANY)(_ack_and_ignore)
