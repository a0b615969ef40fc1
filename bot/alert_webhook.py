"""POST /alerts/alertmanager (SPEC §10.1): Alertmanager's webhook receiver, on the HTTP port in both run modes.

Off (404) unless DIAG_ALERT_WEBHOOK_TOKEN is set. The request must carry the token as a bearer token
(`http_config.authorization`) or as the basic-auth password (`http_config.basic_auth`), compared in constant time;
anything else is 401 before a byte of the body is read. The body is read bounded (413 past 1 MiB, from
Content-Length when sent, else while reading) and only then parsed: payload version 4 validated with pydantic
(core/alerts/alertmanager.py), 400 naming the fields otherwise (never their values); 422 when the group has no
channel to be posted in (no DIAG_ALERT_CHANNEL and no allowed `diag_channel` label). A valid notification is
acknowledged at once (202); opening the group, the root message and the turn run after the ack.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from aiohttp import web
from pydantic import ValidationError

from core.alerts.alertmanager import MAX_BODY_BYTES, AlertGroup
from core.alerts.intake import ALERTMANAGER, AlertIntake
from core.observability.metrics import Metrics

log = logging.getLogger(__name__)

PATH = "/alerts/alertmanager"
READ_CHUNK = 64 * 1024
MAX_ERRORS_SHOWN = 5

Spawn = Callable[[Coroutine[Any, Any, None], str], None]


def presented_secret(authorization: str | None) -> bytes | None:
    """The secret an Authorization header carries: a bearer token, or a basic-auth password."""
    if not authorization:
        return None
    scheme, _, value = authorization.strip().partition(" ")
    if scheme.lower() == "bearer":
        return value.strip().encode()
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(value.strip(), validate=True)
        except (binascii.Error, ValueError):
            return None
        _, colon, password = decoded.partition(b":")
        return password if colon else None
    return None


async def read_bounded(request: web.Request, limit: int) -> bytes | None:
    """The body, or None when it is longer than `limit` (stops reading there)."""
    if request.content_length is not None and request.content_length > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    while chunk := await request.content.read(READ_CHUNK):
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def problems(exc: ValidationError) -> str:
    """Which fields are wrong, without echoing any input value."""
    shown = [f"{'.'.join(str(p) for p in err['loc']) or 'body'}: {err['msg']}" for err in exc.errors()[:MAX_ERRORS_SHOWN]]
    more = f" (+{exc.error_count() - MAX_ERRORS_SHOWN} more)" if exc.error_count() > MAX_ERRORS_SHOWN else ""
    return "; ".join(shown) + more


class AlertWebhook:
    """The route's handler over the intake; the work after the ack goes to `spawn` (kept referenced)."""

    def __init__(self, intake: AlertIntake, spawn: Spawn, metrics: Metrics | None = None) -> None:
        self._intake = intake
        self._spawn = spawn
        self._metrics = metrics or Metrics()
        token = intake.policy.webhook_token
        self._token = token.encode() if token else None

    @property
    def spawn(self) -> Spawn:
        """Where the work after the ack goes."""
        return self._spawn

    def spawning_with(self, spawn: Spawn) -> AlertWebhook:
        """The same webhook handing its work after the ack to `spawn` (bot/ingress.py: onto the main loop)."""
        return AlertWebhook(self._intake, spawn, self._metrics)

    @property
    def enabled(self) -> bool:
        return self._token is not None

    def _refuse(self, status: int, reason: str) -> web.Response:
        self._metrics.alert(ALERTMANAGER, "refused")
        log.warning("alertmanager webhook refused (%d): %s", status, reason)
        headers = {"WWW-Authenticate": 'Bearer realm="diagbot", Basic realm="diagbot"'} if status == 401 else None
        return web.json_response({"error": reason}, status=status, headers=headers)

    async def handle(self, request: web.Request) -> web.Response:
        if self._token is None:
            return web.json_response({"error": "the Alertmanager webhook is off (DIAG_ALERT_WEBHOOK_TOKEN)"},
                                     status=404)
        secret = presented_secret(request.headers.get("Authorization"))
        if secret is None or not hmac.compare_digest(secret, self._token):
            return self._refuse(401, "missing or wrong token")
        body = await read_bounded(request, MAX_BODY_BYTES)
        if body is None:
            return self._refuse(413, f"body over {MAX_BODY_BYTES} bytes")
        try:
            group = AlertGroup.model_validate_json(body)
        except ValidationError as exc:
            return self._refuse(400, f"not an Alertmanager webhook payload (version 4): {problems(exc)}")
        if self._intake.policy.alert_channel(group.common_labels) is None:
            # Refused before the ack, not dropped after a 202: Alertmanager then counts a failed notification
            # (alertmanager_notifications_failed_total, its log names our reason) instead of a silent success.
            return self._refuse(422, "no channel to post this group in: set DIAG_ALERT_CHANNEL, or a diag_channel "
                                     "label naming a channel listed in DIAG_ALLOWED_CHANNELS")
        self._spawn(self._intake.alertmanager(group), f"alert:{group.group_key[:40]}")
        return web.json_response({"status": "accepted", "alerts": len(group.alerts)}, status=202)


def add_alert_routes(app: web.Application, webhook: AlertWebhook | None) -> None:
    """POST /alerts/alertmanager (404 while the webhook is off)."""
    if webhook is not None:
        app.router.add_post(PATH, webhook.handle)
