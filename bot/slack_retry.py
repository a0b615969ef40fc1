"""Calling one Slack method until it works, Slack says no for good, or the caller's time runs out.

The SDK's own retry handlers sleep inside one call (three 429s with Retry-After 30 hold a call for 90 s), which a
caller with a deadline cannot see or stop. Calls that must land (the placeholder, the final message, cleaning up the
placeholder) go through `call_until` on a client without those handlers: retryable failures (see slack_errors) are
retried with capped exponential backoff, honouring Retry-After, and each attempt is bounded by the time left.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from slack_sdk.web.async_client import AsyncWebClient

from bot.slack_errors import SlackFailure, classify

log = logging.getLogger(__name__)

T = TypeVar("T")

FIRST_BACKOFF_S = 0.5
MAX_BACKOFF_S = 8.0
# One attempt never waits longer than this for Slack's answer (a hung connection must not eat the whole budget).
ATTEMPT_TIMEOUT_S = 15.0


_BARE = "_diag_without_retries"  # where a client keeps its bare copy (every turn asks for it two or three times)


def without_retries(client: AsyncWebClient) -> AsyncWebClient:
    """The same client (token, base URL, connection pool) without the SDK's retry handlers.

    The copy is shallow and is kept on the client: the next call returns it again while it is of the client's class
    and every other attribute of the client is still the one it copied (a client whose token or session was replaced
    since, or a wrapper that took over the client's attributes, gets a fresh copy)."""
    attributes = client.__dict__
    bare = attributes.get(_BARE)
    if type(bare) is type(client) and bare.retry_handlers == [] and _same(attributes, bare.__dict__):
        return bare
    bare = copy.copy(client)
    bare.__dict__.pop(_BARE, None)
    bare.retry_handlers = []
    attributes[_BARE] = bare
    return bare


def _same(attributes: dict[str, object], copied: dict[str, object]) -> bool:
    """True when the copy holds the very objects the client holds (its retry handlers and the cache aside)."""
    if len(copied) != len(attributes) - 1:
        return False
    return all(name in (_BARE, "retry_handlers") or copied.get(name, _BARE) is value
               for name, value in attributes.items())


async def call_until(call: Callable[[], Awaitable[T]], *, until: float, what: str, channel: str,
                     first_backoff_s: float = FIRST_BACKOFF_S) -> T | SlackFailure:
    """`await call()` until it succeeds; the last SlackFailure when it is not retryable or `until` (monotonic) passes.

    Never raises for a Slack or network failure (CancelledError still propagates)."""
    backoff = first_backoff_s
    attempt = 0
    while True:
        attempt += 1
        left = until - time.monotonic()
        try:
            async with asyncio.timeout(max(0.05, min(ATTEMPT_TIMEOUT_S, left))):
                return await call()
        except Exception as exc:  # every Slack/network failure is classified; none escapes
            failure = classify(exc)
        pause = failure.retry_after_s if failure.retry_after_s is not None else backoff
        if not failure.retryable or time.monotonic() + pause >= until:
            log.warning("%s in channel %s failed after %d attempt(s): %s (%s)", what, channel, attempt, failure.code,
                        failure.kind.value)
            return failure
        log.info("%s in channel %s failed (%s); retrying in %.1f s", what, channel, failure.code, pause)
        await asyncio.sleep(pause)
        backoff = min(MAX_BACKOFF_S, backoff * 2)
