"""Compiles query_logs arguments into a line matcher: byte needles for the raw prefilter plus exact checks."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from core.errors import ToolFailure

_TERM = re.compile(r'"([^"]*)"|(\S+)')
# JSON encoders may escape these (or non-ASCII) characters, so such terms cannot be searched in raw bytes.
_UNSAFE_RAW = frozenset('"\\/')
_LEVEL_ALIASES = MappingProxyType({"WARNING": "WARN", "ERR": "ERROR", "FATAL": "ERROR", "CRITICAL": "ERROR", "TRACE": "DEBUG"})
REQUIRED_FIELDS = ("timestamp", "service", "level", "message")


EVERY_LINE = "*"
"""The query that matches every line of the service (and level) in the window: the first look's 'what is logged'."""


def every_line(query: str) -> bool:
    """True for the query `*` alone: no keyword filter (a `*` beside words stays a literal term)."""
    return query.strip() == EVERY_LINE


def parse_terms(query: str) -> list[str]:
    """Split a query into lowercased terms: each "quoted phrase" is one term, other words are keywords."""
    terms: list[str] = []
    for phrase, word in _TERM.findall(query):
        term = (phrase if phrase else word).strip().lower()
        if term and term not in terms:
            terms.append(term)
    return terms


def normalise_level(level: Any) -> str:
    """Upper-case a line's level and map common aliases (WARNING -> WARN, FATAL -> ERROR)."""
    upper = str(level).strip().upper()
    return _LEVEL_ALIASES.get(upper, upper)


def parse_timestamp(value: Any) -> datetime | None:
    """Parse an ISO-8601 timestamp (UTC when it has no offset); None when it is not one."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed


def _raw_safe(text: str) -> bool:
    return text.isascii() and text.isprintable() and not (_UNSAFE_RAW & set(text))


@dataclass(frozen=True)
class LineMatcher:
    """Decides whether one log line matches; `anchor` and `needles` drive the cheap raw-bytes prefilter."""

    service: str
    terms: tuple[str, ...]
    level: str | None
    start: datetime
    end: datetime
    anchor: bytes | None
    needles: tuple[bytes, ...]

    @classmethod
    def compile(cls, service: str, query: str, level: str | None, start: datetime, end: datetime) -> LineMatcher:
        """Build a matcher; raises ToolFailure when the query has no terms."""
        terms = [] if every_line(query) else parse_terms(query)
        if not terms and not every_line(query):
            raise ToolFailure("INVALID_ARGUMENTS", "query has no keywords; give words or a \"quoted phrase\".")
        service_lower = service.strip().lower()
        keyword_needles = sorted((t.encode() for t in terms if _raw_safe(t)), key=len, reverse=True)
        service_needles = [service_lower.encode()] if _raw_safe(service_lower) else []
        # The longest keyword is usually the most selective anchor; the service name appears on every line of
        # its own file, so it is a poor anchor and only used when no keyword can be searched raw.
        ordered = keyword_needles + service_needles
        anchor = ordered[0] if ordered else None
        return cls(
            service=service_lower,
            terms=tuple(terms),
            level=level,
            start=start,
            end=end,
            anchor=anchor,
            needles=tuple(ordered[1:]),
        )

    def matches(self, obj: dict[str, Any]) -> datetime | None:
        """The line's timestamp when the parsed line matches every condition, else None."""
        if str(obj["service"]).strip().lower() != self.service:
            return None
        if self.level is not None and normalise_level(obj["level"]) != self.level:
            return None
        message = str(obj["message"]).lower()
        if not all(term in message for term in self.terms):
            return None
        ts = parse_timestamp(obj["timestamp"])
        if ts is None or ts < self.start or ts > self.end:
            return None
        return ts
