"""query_logs' first look (core/steps/first_look.py): what each named service logs at ERROR and WARN in the window,
and how often its most frequent message occurs, as ordinary query_logs calls."""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING, Any

from core.tools.logs.query import EVERY_LINE

if TYPE_CHECKING:
    from core.steps.first_look import Look

TOOL = "query_logs"
SHOWN_LINES = 5
MIN_PHRASE_CHARS = 12
_NOT_IN_PHRASE = re.compile(r'[\d"]+')


def most_frequent_phrase(projection: dict[str, Any] | None) -> str | None:
    """A phrase of the most frequent message among the lines shown (its longest stretch without digits or quotes,
    so every occurrence matches it whatever its numbers), or None when no message has one."""
    lines = (projection or {}).get("logs") or []
    messages = [str(line.get("message", "")) for line in lines if isinstance(line, dict)]
    shapes = Counter(_NOT_IN_PHRASE.sub("#", m) for m in messages if m)
    for shape, _ in shapes.most_common(1):
        fragments = sorted((f.strip(" -:,.;()[]=") for f in shape.split("#")), key=len, reverse=True)
        if fragments and len(fragments[0]) >= MIN_PHRASE_CHARS:
            return fragments[0]
    return None


async def logs_first_look(look: Look) -> None:
    """Per service: its ERROR lines and its WARN lines (every line, the earliest few shown, all counted; the two at
    once), then the count of its most frequent ERROR (else WARN) message when more lines exist than were shown."""
    for service in look.scope.services:
        levels = ("ERROR", "WARN")
        answers = await look.calls_at_once([(TOOL, {"service": service, "query": EVERY_LINE, "level": level,
                                                    "limit": SHOWN_LINES, **look.window()}) for level in levels])
        found = dict(zip(levels, answers, strict=True))
        for level in ("ERROR", "WARN"):
            projection = found[level]
            phrase = most_frequent_phrase(projection)
            if projection is None or phrase is None:
                continue
            if int(projection.get("count") or 0) > len(projection.get("logs") or []):
                await look.call(TOOL, {"service": service, "query": f'"{phrase}"', "level": level, "limit": 1,
                                       **look.window()})
            break
