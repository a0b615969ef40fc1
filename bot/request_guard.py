"""Request hygiene for POST /slack/events, before Bolt sees a byte: the signature is verified on the raw body
(401 when it does not match), then the body must be UTF-8, bounded, shallow JSON (or a form whose `payload` is)
in a shape Slack documents for its type (bot/slack_payloads.py; 400 and one log line otherwise). Unknown request
types get 200 (Slack would retry a 404), and no request ends in a traceback."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

import aiohttp
import aiohttp.http_exceptions
import orjson
from aiohttp import web
from aiohttp.typedefs import Middleware

from bot.slack_payloads import form_problem, payload_problem

log = logging.getLogger(__name__)

REPLAY_WINDOW_S = 300
_SIGNATURE = re.compile(r"v0=[0-9a-f]{64}")
MAX_JSON_DEPTH = 48
"""Slack payloads (Block Kit included) nest far less; deeper JSON is refused before any recursive parser sees it."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def depth_exceeds(value: Any, limit: int) -> bool:
    """True when containers nest deeper than `limit` (iterative: no recursion on hostile input)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        current, depth = stack.pop()
        if depth > limit:
            return True
        children = current.values() if isinstance(current, dict) else current
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def json_problem(text: str) -> str | None:
    """Why `text` is not an acceptable Slack JSON payload, or None."""
    try:
        payload = orjson.loads(text)  # C parser with its own depth cap: never a RecursionError
    except orjson.JSONDecodeError:
        return "invalid JSON (or nested too deep)"
    if depth_exceeds(payload, MAX_JSON_DEPTH):
        return f"JSON nested deeper than {MAX_JSON_DEPTH}"
    return payload_problem(payload)


def body_problem(body: bytes, content_type: str) -> str | None:
    """Why a signed body cannot be handed to the app, or None when it can."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return "the body is not UTF-8"
    if content_type == "application/json":
        return json_problem(text)
    if content_type == "application/x-www-form-urlencoded":
        try:
            form = parse_qs(text, keep_blank_values=True, strict_parsing=bool(text), errors="strict")
        except (ValueError, UnicodeDecodeError):
            return "invalid form encoding"
        if "payload" in form:  # interactivity: the payload field is JSON
            return json_problem(form["payload"][-1])
        return form_problem({key: values[-1] for key, values in form.items()})  # Bolt keeps the last value too
    return f"unsupported content type {content_type or '(none)'}"


def signature_valid(secret: str, timestamp: str | None, signature: str | None, body: bytes, now: float) -> bool:
    """Slack's v0 signature over the raw bytes (slack_sdk's verifier decodes the body as UTF-8 first, which a
    hostile non-UTF-8 body turns into an exception), with its 5-minute replay window."""
    if not secret or not timestamp or not signature or not timestamp.isdigit():
        return False
    if abs(now - int(timestamp)) > REPLAY_WINDOW_S:
        return False
    expected = "v0=" + hmac.new(secret.encode(), b"v0:" + timestamp.encode() + b":" + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, signature)


def headers_fresh(timestamp: str | None, signature: str | None, now: float) -> bool:
    """Slack's signature headers are there, well formed and the timestamp inside the replay window: checked before
    a byte of the body is read (an unsigned 1 MiB body is never read, let alone hashed)."""
    if not timestamp or not signature or not timestamp.isascii() or not timestamp.isdigit() or len(timestamp) > 12:
        return False
    return abs(now - int(timestamp)) <= REPLAY_WINDOW_S and _SIGNATURE.fullmatch(signature) is not None


def _closing(status: int, error: str) -> web.Response:
    response = web.json_response({"error": error}, status=status)
    response.force_close()  # whatever of the body is still unread is not waited for
    return response


async def _read_body(request: web.Request, timeout_s: float) -> bytes | web.Response:
    """The whole body within `timeout_s` (bounded by client_max_size: 413 beyond it), or the answer to give."""
    try:
        async with asyncio.timeout(timeout_s):
            return await request.read()
    except TimeoutError:
        log.warning("refused a request whose body did not arrive within %.0f s", timeout_s)
        return _closing(408, "request body too slow")
    except (ConnectionError, aiohttp.ClientPayloadError, aiohttp.http_exceptions.HttpProcessingError) as exc:
        log.warning("client went away while sending its request body (%s)", type(exc).__name__)
        return _closing(400, "incomplete request body")


def request_guard(signing_secret: str, path: str, *, body_timeout_s: float = 5.0) -> Middleware:
    """aiohttp middleware guarding POST `path` (other routes pass through untouched)."""

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.method != "POST" or request.path != path:
            return await handler(request)
        headers = request.headers
        if not headers_fresh(headers.get("X-Slack-Request-Timestamp"), headers.get("X-Slack-Signature"), time.time()):
            log.info("refused a request without fresh Slack signature headers (body not read)")
            return _closing(401, "invalid signature")
        body = await _read_body(request, body_timeout_s)
        if isinstance(body, web.Response):
            return body
        if not signature_valid(signing_secret, headers.get("X-Slack-Request-Timestamp"),
                               headers.get("X-Slack-Signature"), body, time.time()):
            log.info("refused an unsigned or wrongly signed request (%d bytes)", len(body))
            return web.json_response({"error": "invalid signature"}, status=401)
        if (problem := body_problem(body, request.content_type)) is not None:
            log.warning("refused a malformed signed request: %s (%d bytes)", problem, len(body))
            return web.json_response({"error": "malformed request"}, status=400)
        try:
            response = await handler(request)
        except web.HTTPException:
            raise
        except Exception as exc:  # one line, never a traceback in the log or the answer
            log.error("request failed: %s", type(exc).__name__)
            log.debug("request failure", exc_info=True)
            return web.json_response({"error": "internal error"}, status=500)
        if response.status == 404:  # a signed request no listener handles: acknowledge it, or Slack retries
            log.debug("ignored an unhandled Slack request")
            return web.Response(status=200)
        return response

    return guard
