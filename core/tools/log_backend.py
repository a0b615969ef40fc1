"""What every query_logs backend shares: argument coercion, the checked window, and (for HTTP backends) the
credential-free base URL and one lazily created aiohttp session."""

from __future__ import annotations

import base64
from datetime import datetime

import aiohttp
from yarl import URL

from core.errors import ToolFailure
from core.tools.args import LogsArgs
from core.tools.log_scan import iso_utc


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
