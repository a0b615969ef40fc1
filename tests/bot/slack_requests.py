"""Signed Slack requests (Events API, slash commands, interactivity) sent over real HTTP to the app."""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import time
from typing import Any
from urllib.parse import urlencode

import aiohttp

from tests.fakes.slack_interactions import block_actions, labelled_element

SECRET = "test-signing-secret"
_ids = itertools.count(1)


def sign(secret: str, timestamp: int, body: str) -> str:
    """Slack's v0 signature: HMAC-SHA256 of `v0:{timestamp}:{body}`."""
    base = f"v0:{timestamp}:{body}".encode()
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def envelope(event: dict[str, Any], event_id: str | None = None, team: str = "T1") -> dict[str, Any]:
    """An event_callback body as Slack sends it: the outer envelope of Slack's Events API reference
    (api.slack.com/apis/events-api, "Callback field overview": token, team_id, api_app_id, event, type, event_id,
    event_time, authorizations); signed as "Verifying requests from Slack" documents (sign below)."""
    return {"token": "x", "team_id": team, "api_app_id": "A1", "type": "event_callback",
            "event_id": event_id or f"Ev{next(_ids):08d}", "event_time": int(time.time()), "event": event,
            "authorizations": [{"team_id": team, "user_id": "UBOT", "is_bot": True}]}


class SlackSender:
    """Posts signed requests to the app's /slack/events."""

    def __init__(self, session: aiohttp.ClientSession, url: str, secret: str = SECRET) -> None:
        self.session = session
        self.url = url
        self.secret = secret

    async def post(self, body: str, content_type: str, *, timestamp: int | None = None, signature: str | None = None,
                   headers: dict[str, str] | None = None) -> tuple[int, str]:
        """Send one request; returns (status, body)."""
        ts = int(time.time()) if timestamp is None else timestamp
        hdrs = {"Content-Type": content_type, "X-Slack-Request-Timestamp": str(ts),
                "X-Slack-Signature": signature or sign(self.secret, ts, body), **(headers or {})}
        async with self.session.post(self.url, data=body.encode(), headers=hdrs) as resp:
            return resp.status, await resp.text()

    async def event(self, event: dict[str, Any], *, event_id: str | None = None, retry_num: int | None = None,
                    team: str = "T1", **kw: Any) -> tuple[int, str]:
        """An Events API delivery (optionally marked as a retry)."""
        headers = {"X-Slack-Retry-Num": str(retry_num), "X-Slack-Retry-Reason": "http_timeout"} if retry_num else None
        return await self.post(json.dumps(envelope(event, event_id, team)), "application/json", headers=headers, **kw)

    async def command(self, text: str, *, user: str, team: str = "T1", response_url: str, channel: str = "C1"
                      ) -> tuple[int, str]:
        """A /diag slash command."""
        form = {"token": "x", "team_id": team, "channel_id": channel, "user_id": user, "command": "/diag", "text": text,
                "response_url": response_url, "trigger_id": "1.2.3", "api_app_id": "A1"}
        return await self.post(urlencode(form), "application/x-www-form-urlencoded")

    async def button(self, value: str, *, user: str, team: str = "T1", response_url: str) -> tuple[int, str]:
        """A click on the View trace button."""
        return await self.action("view_trace", value, user=user, team=team, response_url=response_url)

    async def action(self, action_id: str, value: str, *, user: str, response_url: str, team: str | None = "T1",
                     kind: str = "button", enterprise: str | None = None) -> tuple[int, str]:
        """A click on any of the bot's buttons (kind `feedback_buttons` for 👍/👎), in Slack's documented shape
        (tests/fakes/slack_interactions.py): the element's `text` is a plain_text object."""
        message = {"text": "final", "thread_ts": "1.0", "blocks": [
            {"type": "actions", "block_id": "b1", "elements": [labelled_element(action_id, value, kind)]}]}
        payload = block_actions(message, action_id, user=user, response_url=response_url, message_ts="1.5",
                                team=team, enterprise=enterprise)
        return await self.interaction(payload)

    async def interaction(self, payload: dict[str, Any]) -> tuple[int, str]:
        """Any interaction payload, form-encoded as Slack posts it (`payload=<json>`)."""
        return await self.post(urlencode({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded")


def mention(text: str = "<@UBOT> why is order-service failing?", *, ts: str = "100.000001", user: str = "U1",
            channel: str = "C1", thread_ts: str | None = None) -> dict[str, Any]:
    """An app_mention event."""
    ev = {"type": "app_mention", "user": user, "text": text, "ts": ts, "channel": channel, "event_ts": ts}
    if thread_ts:
        ev["thread_ts"] = thread_ts
    return ev


def message(text: str, *, ts: str, thread_ts: str | None = None, user: str | None = "U1", channel: str = "C1",
            **extra: Any) -> dict[str, Any]:
    """A message event (thread reply when thread_ts is set)."""
    ev: dict[str, Any] = {"type": "message", "text": text, "ts": ts, "channel": channel, "channel_type": "channel",
                          "event_ts": ts, **extra}
    if user is not None:
        ev["user"] = user
    if thread_ts:
        ev["thread_ts"] = thread_ts
    return ev
