"""Names the real cause of a failed connection (DNS, refused, timed out, TLS) from an exception and its causes,
so messages say "connection refused" instead of a generic "unreachable" or a misleading "timeout"."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator

DNS = "host not found (DNS lookup failed)"
REFUSED = "connection refused (is the server running, on that port?)"
TIMED_OUT = "timed out"
TLS = "TLS handshake failed (certificate or https/http mismatch)"
RESET = "connection reset by the server"


_LINKS = ("__cause__", "__context__", "orig", "os_error")


def exception_chain(exc: BaseException, links: tuple[str, ...] = _LINKS, limit: int = 16) -> Iterator[BaseException]:
    """The exception, then (breadth first) the errors it links to through the `links` attributes: causes, contexts
    and the errors drivers keep in attributes; at most `limit` of them, no cycles."""
    seen: set[int] = set()
    pending = [exc]
    while pending and len(seen) < limit:
        current = pending.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        for attr in links:
            inner = getattr(current, attr, None)
            if isinstance(inner, BaseException):
                pending.append(inner)


def network_cause(exc: BaseException) -> str | None:
    """DNS / REFUSED / TIMED_OUT / TLS / RESET when the exception chain shows one, else None."""
    for current in exception_chain(exc):
        name = type(current).__name__
        if isinstance(current, socket.gaierror) or "DNSError" in name or "NameResolution" in name:
            return DNS
        if isinstance(current, ConnectionRefusedError):
            return REFUSED
        if isinstance(current, ssl.SSLError) or "SSLError" in name or "CertificateError" in name:
            return TLS
        if isinstance(current, ConnectionResetError):
            return RESET
    for current in exception_chain(exc):
        if isinstance(current, TimeoutError) or "Timeout" in type(current).__name__:
            return TIMED_OUT
    return None
