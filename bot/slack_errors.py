"""What a failed Slack Web API call means for the caller, whatever the answer looked like.

`classify(exc)` never raises. It reads a `SlackApiError` whose body was JSON (`{"ok": false, "error": ...}`), plain
text, HTML, empty or unparseable (the SDK then hands over a raw aiohttp response, or a str/None body), and network
failures (connection reset, timeout) alike, and returns one `SlackFailure`:

- `RETRYABLE`: Slack or the path to it is having a moment (5xx, 429 / `ratelimited`, reset, timeout, garbage body):
  the same call may succeed later; `retry_after_s` is Slack's Retry-After when it sent one.
- `MESSAGE`: this call will keep failing for this message (its content was refused, or the message to edit is gone),
  but another call for the same thread may work (post a new message, a shorter note).
- `CHANNEL`: nothing the bot sends will reach this channel (not a member, archived, no such channel, token revoked):
  log it with the channel and stop.

Codes are allow-listed per kind; an unknown code is `MESSAGE` (try another way once, never hammer). The `code` is a
short safe token (Slack's error code, `http_503`, `html_body`, `ConnectionResetError`…): never a body or a payload.
Used by delivery, progress, access and the streaming progress display alike.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError


class FailureKind(StrEnum):
    """How far a failure reaches (see the module docstring)."""

    RETRYABLE = "retryable"
    MESSAGE = "message"
    CHANNEL = "channel"


# Slack's documented transient errors (every method).
RETRYABLE_CODES = frozenset({"ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout",
                             "update_failed", "team_added_to_org", "accesslimited"})
# The channel (or the token) is out of reach: no other call will post there either.
CHANNEL_CODES = frozenset({
    "channel_not_found", "not_in_channel", "is_archived", "is_inactive", "restricted_action",
    "restricted_action_read_only_channel", "restricted_action_thread_only_channel",
    "restricted_action_non_threadable_channel", "team_access_not_granted", "ekm_access_denied",
    "cannot_reply_to_message", "invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired",
    "no_permission", "missing_scope", "not_allowed_token_type", "org_login_required", "enterprise_is_restricted",
    "two_factor_setup_required", "access_denied",
})
# The content of the message was refused: a simpler message (the short note) may pass where this one did not.
CONTENT_CODES = frozenset({"invalid_blocks", "invalid_blocks_format", "msg_too_long", "msg_blocks_too_long", "no_text",
                           "too_many_attachments", "invalid_metadata_format", "invalid_metadata_schema",
                           "metadata_too_large", "metadata_must_be_sent_from_app", "invalid_attachments",
                           "markdown_text_conflict"})
RETRYABLE_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
# What the body was when it was not Slack's JSON: someone else (a proxy, a load balancer) answered, or a hiccup.
_GARBAGE = frozenset({"html_body", "text_body", "empty_body", "unparseable_body", "binary_body", "non_json_body",
                      "unknown_error"})
_SAFE_CODE = re.compile(r"^[a-z0-9_]{1,64}$")
MAX_RETRY_AFTER_S = 120.0


@dataclass(frozen=True)
class SlackFailure:
    """One failed Slack call, classified."""

    kind: FailureKind
    code: str
    status: int | None = None
    retry_after_s: float | None = None

    @property
    def retryable(self) -> bool:
        """The same call may succeed later."""
        return self.kind is FailureKind.RETRYABLE

    @property
    def refused_content(self) -> bool:
        """Slack refused what the message contained (a shorter message may pass)."""
        return self.code in CONTENT_CODES


def _status_and_headers(response: Any) -> tuple[int | None, Any]:
    status = getattr(response, "status_code", None)
    if status is None:
        status = getattr(response, "status", None)  # a raw aiohttp ClientResponse (unparseable JSON body)
    return (status if isinstance(status, int) else None), getattr(response, "headers", None) or {}


def _retry_after(headers: Any) -> float | None:
    try:
        raw = headers.get("Retry-After") or headers.get("retry-after")
    except Exception:  # headers of an unexpected shape: no hint
        return None
    try:
        return min(MAX_RETRY_AFTER_S, max(0.0, float(raw))) if raw is not None else None
    except (TypeError, ValueError):
        return None


def _body_code(response: Any) -> str | None:
    """Slack's `error` field when the body was a JSON object, else a word for what the body was."""
    data = getattr(response, "data", None)
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, str) and _SAFE_CODE.match(error):
            return error
        if error is not None:
            return "unknown_error"
        return None if data else "non_json_body"  # {}: the SDK found no JSON (an HTML or other content type)
    if isinstance(data, str):
        return "html_body" if "<html" in data[:512].lower() else "text_body"
    if isinstance(data, bytes):
        return "binary_body"
    if data is None and hasattr(response, "data"):
        return "empty_body"
    if not hasattr(response, "data"):
        return "unparseable_body"  # the SDK passes the raw aiohttp response when a JSON body did not parse
    return None


def _kind_of(code: str, status: int | None) -> FailureKind:
    if code in RETRYABLE_CODES:
        return FailureKind.RETRYABLE
    if code in CHANNEL_CODES:
        return FailureKind.CHANNEL
    if code in CONTENT_CODES:
        return FailureKind.MESSAGE
    if status in RETRYABLE_STATUSES:
        return FailureKind.RETRYABLE
    if code in _GARBAGE and (
            status is None or status == 200 or status >= 500):
        return FailureKind.RETRYABLE  # a proxy or a hiccup answered in Slack's place
    return FailureKind.MESSAGE


def _from_api_error(exc: SlackApiError) -> SlackFailure:
    response = exc.response
    status, headers = _status_and_headers(response)
    code = _body_code(response) or (f"http_{status}" if status else "unknown_error")
    if code in {"empty_body", "unknown_error", "non_json_body"} and status and status != 200:
        code = f"http_{status}"
    kind = _kind_of(code, status)
    return SlackFailure(kind=kind, code=code, status=status, retry_after_s=_retry_after(headers))


def classify(exc: BaseException) -> SlackFailure:
    """Classify any exception a Slack Web API call raised (never raises itself)."""
    try:
        if isinstance(exc, SlackApiError):
            return _from_api_error(exc)
    except Exception:  # a response of a shape nobody foresaw: still an answer, never a crash
        return SlackFailure(kind=FailureKind.RETRYABLE, code="unreadable_error")
    name = type(exc).__name__
    if isinstance(exc, aiohttp.ClientResponseError):
        status = exc.status
        return SlackFailure(kind=FailureKind.RETRYABLE if status in RETRYABLE_STATUSES or status >= 500
                            else FailureKind.MESSAGE, code=f"http_{status}", status=status)
    if isinstance(exc, aiohttp.ClientError | OSError | asyncio.TimeoutError | TimeoutError | ConnectionError):
        return SlackFailure(kind=FailureKind.RETRYABLE, code=name)
    # AttributeError/ValueError/TypeError from the SDK reading an odd body: the call did not go through cleanly.
    return SlackFailure(kind=FailureKind.RETRYABLE, code=name if _SAFE_NAME.match(name) else "unexpected_error")


_SAFE_NAME = re.compile(r"^[A-Za-z0-9_]{1,64}$")


def error_code(exc: BaseException) -> str:
    """The short, safe code of a failed call (Slack's error code, `http_503`, or the exception's type)."""
    return classify(exc).code
