"""Request hygiene over real HTTP: the signature is checked on the raw body first (401), malformed signed bodies
get 400 and one log line, unknown request types 200, and no request produces a 500 or a traceback."""

from __future__ import annotations

import copy
import hashlib
import hmac
import io
import json
import logging
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest

from tests.bot.conftest import Harness
from tests.bot.slack_requests import SECRET, envelope, mention

JSON = "application/json"
FORM = "application/x-www-form-urlencoded"
DEEP = "[" * 50_000 + "]" * 50_000
BLOCK_ACTIONS: dict[str, Any] = {"type": "block_actions", "team": {"id": "T1"}, "user": {"id": "U1", "team_id": "T1"},
                 "api_app_id": "A1", "channel": {"id": "C1"}, "response_url": "http://127.0.0.1:9/r", "trigger_id": "1",
                 "container": {"type": "message", "message_ts": "1.0", "channel_id": "C1"},
                 "actions": [{"action_id": "view_trace", "block_id": "diag_footer", "value": "run_x", "type": "button",
                              "action_ts": "1.0"}]}

MALFORMED: list[tuple[str, bytes, str]] = [
    ("invalid JSON", b'{"type": "event_callback", ', JSON),
    ("invalid UTF-8", b'{"type": "event_callback", "x": "\xff\xfe"}', JSON),
    ("50k-deep JSON", DEEP.encode(), JSON),
    ("50k-deep JSON in an interactive payload", urlencode({"payload": DEEP}).encode(), FORM),
    ("interactive payload that is not JSON", urlencode({"payload": "{not json"}).encode(), FORM),
    ("interactive payload that is a list", urlencode({"payload": "[1, 2]"}).encode(), FORM),
    ("actions that are not a list of objects",
     urlencode({"payload": json.dumps({**BLOCK_ACTIONS, "actions": "view_trace"})}).encode(), FORM),
    ("a user id that is a number", urlencode({"payload": json.dumps({**BLOCK_ACTIONS, "user": 5})}).encode(), FORM),
    ("an event that is a string", json.dumps({**envelope(mention()), "event": "app_mention"}).encode(), JSON),
    ("authorizations that are text", json.dumps({**envelope(mention()), "authorizations": "x"}).encode(), JSON),
    ("invalid UTF-8 in a form", b"payload=%7B%22type%22%3A%22\xff%22%7D", FORM),
    ("a body of another content type", b"<xml/>", "text/xml"),
]


async def _post_raw(harness: Harness, body: bytes, content_type: str, *, signed: bool) -> int:
    """POST raw bytes, signed over exactly those bytes (or with a wrong signature)."""
    ts = int(time.time())
    digest = hmac.new(SECRET.encode(), f"v0:{ts}:".encode() + body, hashlib.sha256).hexdigest()
    signature = "v0=" + (digest if signed else "0" * 64)
    headers = {"Content-Type": content_type, "X-Slack-Request-Timestamp": str(ts), "X-Slack-Signature": signature}
    async with harness.send.session.post(harness.send.url, data=io.BytesIO(body), headers=headers) as resp:
        return resp.status


@pytest.mark.parametrize(("what", "body", "content_type"), MALFORMED, ids=[m[0] for m in MALFORMED])
async def test_malformed_bodies_are_400_signed_401_unsigned_with_one_log_line(
    harness: Harness, caplog: pytest.LogCaptureFixture, what: str, body: bytes, content_type: str
) -> None:
    """Signed: 400 and exactly one log line; unsigned: 401; nothing runs; the server answers a mention within 3 s."""
    with caplog.at_level(logging.DEBUG, logger="bot.request_guard"):
        assert await _post_raw(harness, body, content_type, signed=True) == 400
    lines = [r for r in caplog.records if r.name == "bot.request_guard" and r.levelno >= logging.INFO]
    assert len(lines) == 1
    assert "malformed" in lines[0].getMessage()
    assert await _post_raw(harness, body, content_type, signed=False) == 401
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert harness.chat.turns == []
    started = time.monotonic()
    status, _ = await harness.send.event(mention(ts="77.0"))
    assert status == 200
    assert time.monotonic() - started < 3


async def test_unknown_event_types_are_acknowledged_and_ignored(harness: Harness) -> None:
    """An event type no listener handles gets 200 (a 404 would make Slack retry), and starts nothing."""
    status, _ = await harness.send.event({"type": "reaction_added", "user": "U1", "reaction": "eyes",
                                          "item": {"type": "message", "channel": "C1", "ts": "1.0"}})
    assert status == 200
    status, _ = await harness.send.post(json.dumps({"type": "some_future_type", "token": "x"}), JSON)
    assert status == 200
    other_action = {**BLOCK_ACTIONS, "actions": [{**BLOCK_ACTIONS["actions"][0], "action_id": "unknown_button"}]}
    status, _ = await harness.send.post(urlencode({"payload": json.dumps(other_action)}), FORM)
    assert status == 200
    await harness.settle()
    assert harness.chat.turns == []


def _mutations(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Every path of a payload, each paired with every hostile replacement value."""
    hostile: tuple[Any, ...] = (None, 5, "x", [], {"id": True})
    for bad in hostile:
        if path:
            yield path, bad
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        yield from _mutations(child, (*path, key))


def _replace(payload: Any, path: tuple[Any, ...], bad: Any) -> Any:
    mutated = copy.deepcopy(payload)
    target = mutated
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = bad
    return mutated


async def test_no_mutation_of_a_real_payload_gets_a_500(harness: Harness, caplog: pytest.LogCaptureFixture) -> None:
    """Every field of a real event and a real block_actions payload replaced by each hostile value, signed: every
    answer is 200 or 400, never 500, and nothing logs a traceback."""
    event_body = envelope(mention(ts="88.0"))
    statuses: dict[int, int] = {}
    with caplog.at_level(logging.WARNING):
        for path, bad in _mutations(event_body):
            status, _ = await harness.send.post(json.dumps(_replace(event_body, path, bad)), JSON)
            statuses[status] = statuses.get(status, 0) + 1
        actions = {**BLOCK_ACTIONS, "response_url": harness.slack.response_url()}
        for path, bad in _mutations(actions):
            form = urlencode({"payload": json.dumps(_replace(actions, path, bad))})
            status, _ = await harness.send.post(form, FORM)
            statuses[status] = statuses.get(status, 0) + 1
        await harness.settle()
    assert set(statuses) <= {200, 400}, statuses
    assert sum(statuses.values()) > 150
    assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records if r.exc_info][:3]


async def test_an_oversized_body_is_refused_without_a_traceback(harness: Harness, caplog: pytest.LogCaptureFixture) -> None:
    """A 2 MiB body (beyond aiohttp's 1 MiB bound), signed or not: 413, nothing logged with a traceback."""
    body = json.dumps({"type": "event_callback", "pad": "x" * (2 * 1024 * 1024)}).encode()
    with caplog.at_level(logging.WARNING):
        assert await _post_raw(harness, body, JSON, signed=True) == 413
        assert await _post_raw(harness, body, JSON, signed=False) == 413
    assert not [r for r in caplog.records if r.exc_info]
    status, _ = await harness.send.event(mention(ts="79.0"))
    assert status == 200
