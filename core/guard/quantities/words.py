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


# "18.7 million rows": a number and a magnitude word become the glued magnitude the extractor reads (18.7M), before
# text2num, which would read "18.7 million" as "18.7 1000000".
_MAGNITUDE_WORD = re.compile(r"\b(\d+(?:\.\d+)?) (thousand|million|billion)\b", re.IGNORECASE)
_MAGNITUDE_SUFFIX = MappingProxyType({"thousand": "k", "million": "M", "billion": "bn"})
# "an hour after the deploy", "half an hour before": one unit of time in a relation between two moments (alone, "in
# an hour" is usually a plan, not a measurement, so it is left as words).
_ONE_UNIT = re.compile(r"\b(half an hour|an hour|a minute|a second|a day|a week)(?= (?:after|before|later|earlier|of|since)\b)",
                       re.IGNORECASE)
_ONE_UNIT_DIGITS = MappingProxyType({"half an hour": "30 min", "an hour": "1 h", "a minute": "1 min", "a second": "1 s",
                                     "a day": "1 day", "a week": "1 week"})
# Roman numerals as counts ("XVII connections"): upper case, three letters or more (or two before a lower-case word),
# minus the words and abbreviations operations text writes in capitals (CI, CD, DC, MD, DIV, MIX, ...).
_ROMAN = re.compile(r"(?<![\w-])(?=[MDCLXVI]{2,}(?![\w-]))(M{0,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3}))(?![\w-])"
                    r"(?=( [a-z])?)")
_ROMAN_WORDS = frozenset({"CI", "CD", "DC", "MD", "MC", "MM", "CM", "DI", "LI", "MI", "DIV", "MIX", "CIV", "DIM", "MID",
                          "LID", "VID", "CLI", "DLL", "MDM", "CC", "XL", "LL", "II", "III", "IV", "VI", "VII", "VIII",
                          "IX", "XI", "CX", "MCM", "DCL"})
_ROMAN_VALUES = MappingProxyType({"M": 1000, "D": 500, "C": 100, "L": 50, "X": 10, "V": 5, "I": 1})


def _roman_value(numeral: str) -> int:
    total = 0
    for index, char in enumerate(numeral):
        value = _ROMAN_VALUES[char]
        following = _ROMAN_VALUES[numeral[index + 1]] if index + 1 < len(numeral) else 0
        total += -value if value < following else value
    return total


def _roman(match: re.Match[str]) -> str:
    numeral = match[1]
    if not numeral or numeral in _ROMAN_WORDS or (len(numeral) < 3 and not match[2]):
        return match[0]
    return str(_roman_value(numeral))


def _plain_forms(text: str) -> str:
    """Magnitude words, one-unit durations and roman numerals written as digits (before text2num)."""
    if "illion" in text or "housand" in text:
        text = _MAGNITUDE_WORD.sub(lambda m: m[1] + _MAGNITUDE_SUFFIX[m[2].lower()], text)
    if _matches(text, _UNIT_NAMES, _UNIT_WORD):
        text = _ONE_UNIT.sub(lambda m: _ONE_UNIT_DIGITS[m[1].lower()], text)
    if _ROMAN_LETTERS.search(text):
        text = _ROMAN.sub(_roman, text)
    return text


_ROMAN_LETTERS = re.compile(r"[MDCLXVI][MDCLXVI]")
"""Two numeral letters in a row (written out, not `{2}`: a leading character class lets the search skip ahead in C)."""
_UNIT_WORD = re.compile(r"\ban? (?:hour|minute|second|day|week)\b", re.IGNORECASE)
_STEMS = ("one", "two", "thre", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twel", "twent",
          "thirt", "fift", "hundred", "thousand", "million", "billion", "dozen", "twice", "thrice", "couple", "pair")
"""Substrings every number word contains: a cheap first test (false hits only cost the exact one)."""
_STEM = re.compile("|".join(_STEMS), re.IGNORECASE)
_UNIT_NAMES = ("hour", "minute", "second", "day", "week")
"""Substrings every match of _UNIT_WORD contains."""


def _matches(text: str, parts: tuple[str, ...], pattern: re.Pattern[str]) -> bool:
    """Whether `pattern` (case-insensitive, made of ASCII letters) matches, each match holding one of the lower-case
    `parts`: for ASCII text, str.find of the parts first rules most texts out far cheaper than a case-insensitive
    regex scan (beyond ASCII, case folding reaches further, as the long s for 's': the pattern alone answers)."""
    if text.isascii():
        lowered = text.lower()
        if not any(map(lowered.__contains__, parts)):
            return False
    return pattern.search(text) is not None


def digits_for_words(text: str) -> str:
    """The text with spelled-out numbers as digits (unchanged when it has none)."""
    text = _plain_forms(text)
    if not _matches(text, _STEMS, _STEM) or HAS_WORDS.search(text) is None:
        return text
    for pattern, replacement in _IDIOMS:
        text = pattern.sub(replacement, text)
    text = _WORD_UNIT.sub(_short, text)
    return str(alpha2digit(text, "en", threshold=2))
