"""What every query_logs backend shares: its name and argument model, the checked window, the effective arguments
it reports, short extra fields, and (for HTTP backends) the credential-free base URL, one lazily created aiohttp
session, one way to read an answer and clean error text."""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Iterable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import aiohttp
from pydantic import SecretStr
from yarl import URL

from core.errors import ToolFailure
from core.tools.logs.args import NAME, LogsArgs
from core.tools.logs.scan import iso_utc

MAX_BODY_BYTES = 16 * 1024 * 1024
MAX_EXTRA_FIELDS = 20
MAX_FIELD_CHARS = 200
ERROR_CHARS = 200
CORE_KEYS = frozenset({"timestamp", "service", "level", "message"})


class QueryLogsTool:
    """What every query_logs backend declares: the tool's name and its argument model."""

    name = NAME
    args_model: type[LogsArgs] = LogsArgs


def effective_arguments(args: LogsArgs, start: datetime, end: datetime) -> dict[str, Any]:
    """The arguments a search really ran with (the window resolved against the clock), as every backend reports them."""
    return {
        "service": args.service,
        "query": args.query,
        "level": args.level,
        "start": iso_utc(start),
        "end": iso_utc(end),
        "limit": args.limit,
    }


def is_short(value: Any) -> bool:
    """A field value small enough to keep as an extra item field: a scalar, or a string of MAX_FIELD_CHARS at most."""
    if value is None or isinstance(value, bool | int):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, str) and len(value) <= MAX_FIELD_CHARS


def checked_window(args: LogsArgs, now: datetime) -> tuple[datetime, datetime]:
    """The effective [start, end] window; an empty or inverted one is INVALID_ARGUMENTS."""
    start, end = args.window(now)
    if start >= end:
        raise ToolFailure("INVALID_ARGUMENTS", f"start must be before end (end defaults to the clock, {iso_utc(end)}).")
    return start, end


def split_url(url: str, setting: str, example: str) -> tuple[str, str | None]:
    """The base URL without credentials, plus a basic Authorization header value when the URL carried user:password.

    A URL that is not http(s) with a host is refused naming the setting, never echoing the URL (it may hold a password)."""
    parsed = URL(url)
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(f"{setting} must be an http(s) URL with a host, e.g. {example}")
    auth = None
    if parsed.user is not None:
        pair = f"{parsed.user}:{parsed.password or ''}".encode()
        auth = "Basic " + base64.b64encode(pair).decode("ascii")
    clean = parsed.with_user(None).with_password(None).with_query(None).with_fragment(None)
    return str(clean).rstrip("/"), auth


class LazySession:
    """One aiohttp session per backend, created on first use inside the running loop (tools are built outside any
    loop) and closed by aclose()."""

    def __init__(self, headers: dict[str, str], timeout_s: float) -> None:
        self.headers = headers
        self.timeout = aiohttp.ClientTimeout(total=max(0.1, timeout_s))
        self._session: aiohttp.ClientSession | None = None

    @property
    def current(self) -> aiohttp.ClientSession | None:
        """The session if one was created (for checks), else None."""
        return self._session

    def get(self) -> aiohttp.ClientSession:
        """The open session (a new one after close)."""
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(headers=self.headers, timeout=self.timeout)
        return self._session

    async def aclose(self) -> None:
        """Close the session (safe to call more than once)."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()


class HttpLogsTool(QueryLogsTool):
    """A query_logs backend over HTTP: one LazySession closed by aclose(), and the credentials its messages hide."""

    _headers: dict[str, str]
    _secrets: list[str]
    _http: LazySession

    def _connect(
        self, url: str, basic: str | None, headers: dict[str, str], scheme: str, credential: SecretStr | None,
        timeout_s: float,
    ) -> None:
        """Authorize with `<scheme> <credential>` when one is given, else with the URL's user:password; remember
        every secret involved (to redact from error text) and open the lazy session."""
        password = URL(url).password
        self._secrets = [password] if password else []
        if basic is not None:
            self._secrets.append(basic.removeprefix("Basic "))
        key = credential.get_secret_value() if credential is not None else ""
        if key:
            # An explicit API key or token wins over URL credentials (one Authorization header).
            headers["Authorization"] = f"{scheme} {key}"
            self._secrets.append(key)
        elif basic is not None:
            headers["Authorization"] = basic
        self._headers = headers
        self._http = LazySession(headers, timeout_s)

    async def aclose(self) -> None:
        """Close the HTTP session (safe to call more than once)."""
        await self._http.aclose()


def clean_error_text(text: str, secrets: Iterable[str], replacements: Iterable[tuple[str, str]] = ()) -> str:
    """A backend's error text on one line, with every secret removed (then each `replacements` pair applied),
    shortened to ERROR_CHARS."""
    text = " ".join(text.split())
    for secret in secrets:
        text = text.replace(secret, "[REDACTED]")
    for old, new in replacements:
        text = text.replace(old, new)
    if len(text) > ERROR_CHARS:
        text = text[: ERROR_CHARS - 1] + "…"
    return text or "no reason given"


@dataclass(frozen=True)
class HttpBackend:
    """How one HTTP log backend's failures are named: 'Loki' / 'LOKI_...', and the settings to check on a 401."""

    name: str
    code: str
    credentials_hint: str

    async def read(
        self, request: AbstractAsyncContextManager[aiohttp.ClientResponse], what: str, session: LazySession,
    ) -> tuple[int, bytes]:
        """Send the request (made on `session`) and return (status, body of MAX_BODY_BYTES + 1 at most); no answer or
        refused credentials become a ToolFailure without secrets."""
        try:
            async with request as response:
                body = await response.content.read(MAX_BODY_BYTES + 1)
                status = response.status
        except TimeoutError as exc:
            seconds = session.timeout.total or 0.0
            raise ToolFailure("BACKEND_UNAVAILABLE", f"{self.name} did not answer the {what} within {seconds:.1f} s.") from exc
        except aiohttp.ClientError as exc:
            message = f"{self.name} is unreachable ({type(exc).__name__}); this call is not evidence."
            raise ToolFailure("BACKEND_UNAVAILABLE", message) from exc
        if status in (401, 403):
            message = f"{self.name} refused the credentials (HTTP {status}); {self.credentials_hint}."
            raise ToolFailure(f"{self.code}_UNAUTHORIZED", message)
        return status, body

    def rejected(self, what: str, reason: str) -> ToolFailure:
        """The failure for a 400: the backend rejected the query, for this reason."""
        return ToolFailure(f"{self.code}_BAD_QUERY", f"{self.name} rejected the {what}: {reason}")

    def json_body(self, status: int, body: bytes, what: str, answer: str | None = None) -> Any:
        """The JSON of a 200 answer; any other status, an oversized or a non-JSON body is a ToolFailure. `answer`
        names the answer in messages (default: "<name>'s answer to the <what>")."""
        answer = answer or f"{self.name}'s answer to the {what}"
        if status != 200:
            raise ToolFailure("BACKEND_UNAVAILABLE", f"{self.name} answered the {what} with HTTP {status}; "
                                                     "this call is not evidence.")
        if len(body) > MAX_BODY_BYTES:
            raise ToolFailure(f"{self.code}_BAD_RESPONSE", f"{answer} exceeds {MAX_BODY_BYTES} bytes.")
        try:
            return json.loads(body)
        except ValueError as exc:
            raise ToolFailure(f"{self.code}_BAD_RESPONSE", f"{answer} is not JSON; not evidence.") from exc
