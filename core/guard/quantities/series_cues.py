"""Which statistic of a metric series a draft's number claims: "peaked at 86 %" is the series' max, "averaged 27 %"
its mean, "bottomed out at 3" its min. Such a claim is grounded only by that statistic of a cited series (a point
that happens to have the value is not its peak); a number without a cue may be any value the series shows."""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

_FILLER = r"(?:\s+(?:at|of|to|was|were|is|near|around|about|roughly|approximately|approx\.?|~|reached|hit|a|an|the|value|"\
          r"high|low|level|rate|ratio|latency|usage|"\
          r"over|during|across|in|for|window|hour|period|p\d\d|of\s+the))*\s*~?$"
_CUES: Mapping[str, re.Pattern[str]] = MappingProxyType({
    "max.v": re.compile(r"\b(?:peak(?:ed|ing|s)?|max(?:imum|imal|ed)?|highest|topped(?:\s+out)?|spiked?)" + _FILLER),
    "mean": re.compile(r"\b(?:averag(?:e|ed|ing|es)|mean)" + _FILLER),
    "min.v": re.compile(r"\b(?:lowest|minimum|min|bottom(?:ed)?(?:\s+out)?|trough)" + _FILLER),
})
_LOOK_BACK = 60


def series_stat(text: str, start: int) -> str | None:
    """The series field ("max.v", "mean", "min.v") a number at `start` of `text` claims to be, or None."""
    before = text[max(0, start - _LOOK_BACK):start].lower()
    for stat, cue in _CUES.items():
        if cue.search(before):
            return stat
    return None
