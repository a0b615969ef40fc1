"""Spelled-out numbers: text2num turns number words into digits ("seventeen times" -> "17 times"); a few idioms it
does not read ("a dozen", "twice", "a couple of") are spelled out first. "one" stays a word ("one of the pods",
"at once"): text2num's threshold leaves isolated numbers below 2 alone, as an engineer would read them.
"""

from __future__ import annotations

import re
from types import MappingProxyType

from text_to_num import alpha2digit

_NUMBER_WORD = (
    r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen"
    r"|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand|million|billion"
)
HAS_WORDS = re.compile(rf"\b(?:{_NUMBER_WORD}|dozen|twice|thrice|couple|pair)\b", re.IGNORECASE)
"""A cheap test: only texts with a number word go through text2num."""

_IDIOMS = (
    (re.compile(r"\bhalf an? dozen\b", re.IGNORECASE), "6"),
    (re.compile(r"\ba dozen\b", re.IGNORECASE), "12"),
    (re.compile(r"\btwice\b", re.IGNORECASE), "2 times"),
    (re.compile(r"\bthrice\b", re.IGNORECASE), "3 times"),
    (re.compile(r"\ba (?:couple|pair) of\b", re.IGNORECASE), "2"),
)
# "a thirty-second timeout": text2num would read "thirty-second" as the ordinal 32nd, so the unit is split off
# (and shortened to a form text2num leaves alone) before it reads the number.
_WORD_UNIT = re.compile(
    rf"\b({_NUMBER_WORD})[- ](seconds?|minutes?|hours?|days?|weeks?|percent)\b", re.IGNORECASE
)
_UNIT_SHORT = MappingProxyType({"second": "s", "seconds": "s", "minute": "min", "minutes": "min", "hour": "h", "hours": "h",
               "day": "days", "days": "days", "week": "weeks", "weeks": "weeks", "percent": "%"})


def _short(match: re.Match[str]) -> str:
    return f"{match[1]} {_UNIT_SHORT[match[2].lower()]}"


_STEMS = ("one", "two", "thre", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twel", "twent",
          "thirt", "fift", "hundred", "thousand", "million", "billion", "dozen", "twice", "thrice", "couple", "pair")
"""Substrings every number word contains: a cheap first test (false hits only cost the exact one)."""


def digits_for_words(text: str) -> str:
    """The text with spelled-out numbers as digits (unchanged when it has none)."""
    lowered = text.lower()
    if not any(stem in lowered for stem in _STEMS) or HAS_WORDS.search(text) is None:
        return text
    for pattern, replacement in _IDIOMS:
        text = pattern.sub(replacement, text)
    text = _WORD_UNIT.sub(_short, text)
    return str(alpha2digit(text, "en", threshold=2))
