"""URLs as a check may print them: scheme, host, port and path only (no user, password or query)."""

from __future__ import annotations

from urllib.parse import urlsplit


def display_url(url: str) -> str:
    """The URL without credentials, query or fragment; a URL that does not parse becomes '<unparseable URL>'."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "<unparseable URL>"
    if not parts.scheme:
        return "<unparseable URL>"
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    return f"{parts.scheme}://{host}{port}{parts.path}"
