"""Numeric grounding: one tokenizer for draft text and evidence, so a number is grounded only if a tool showed it.

A number is a maximal run of digits possibly joined by `.`, `,` or `:` (`4.18.0`, `23:05:28`, `1,024`);
`92%` is `92`, `12s` is `12`, and a sentence-final `.` is not part of it. Digits glued *after* a letter,
digit or `_` belong to a word, not a number (`a1`, `p99`, `HikariPool1`, `call_12`, `k8s`), with two
exceptions: a lone `v` or `x` prefix (`v4.18.0` is the number `4.18.0`, "OOMKilled x3" states the count `3`,
`x86` is `86`) and the `T` of an ISO timestamp
(`2026-11-29T23:05:28Z` yields `23:05:28`). After a `-` or a space digits are a number (`HikariPool-1` -> `1`).
HTTP status classes (`5xx`) are words. Thousands separators are normalised (`1,024` == `1024`).

Evidence sources are tokenised with the same rules, plus sub-tokens of times (`23:05:28.123` also yields
`23:05:28`, `23:05`, `23`, `05`, `5`, `28`) so natural phrasing ("at 23:05") grounds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

# The leading (?=\d) lets every non-digit position fail at once, before the lookbehinds run (2-3x faster).
_NUMBER = re.compile(r"(?=\d)(?:(?<!\w)|(?<=\dT)|(?<=(?<!\w)[vVxX]))((?>\d+(?:[.,:]\d+)*))(?![xX]{2}\b)")
_THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_INT = re.compile(r"\d+")
_WHOLE_FLOAT = re.compile(r"(\d+)\.0+")
_RUN_CHARS = frozenset("0123456789.,:")
_SIMPLE_RUN = re.compile(r"[0-9]+(?:[.,:][0-9]+)*")
_RUN_REST = re.compile(r"[0-9.,:]*")
_WORD = re.compile(r"\w")


def _is_word(char: str) -> bool:
    """Same as the regex's \\w, with a fast path for ASCII."""
    return (char.isalnum() or char == "_") if char.isascii() else _WORD.match(char) is not None


def _starts_number(text: str, start: int) -> bool:
    """Whether the number regex's lookbehinds accept a token starting at `start` (see the module docstring)."""
    if start == 0 or not _is_word(text[start - 1]):
        return True
    before = text[start - 1]
    if before == "T":
        return start >= 2 and text[start - 2].isdigit()
    return before in "vVxX" and (start < 2 or not _is_word(text[start - 2]))


# Projection keys that identify the call rather than describe evidence: never grounding sources.
NON_SOURCE_KEYS = frozenset({"tool_call_id", "tool_name", "evidence_status", "truncated", "error"})


def canonical(token: str) -> str:
    """Normalise a number token (drop thousands separators) so `1,024` and `1024` compare equal."""
    if "," in token and _THOUSANDS.fullmatch(token):
        return token.replace(",", "")
    return token


def numbers_in(text: str) -> list[str]:
    """The number tokens of a text, canonicalised, in order of appearance (duplicates kept)."""
    return [canonical(m) for m in _NUMBER.findall(text)]


def _expand(token: str, out: set[str]) -> None:
    """Add a source token and the sub-tokens natural phrasing may use (time parts, unpadded integers)."""
    if "," in token:
        token = canonical(token)
    out.add(token)
    if ":" in token:
        parts = token.split(":")
        last = parts[-1]
        if "." in last:
            parts[-1] = last.split(".", 1)[0]
            out.add(":".join(parts))
        if len(parts) > 2:
            out.add(":".join(parts[:2]))
        if parts[0].startswith("0") and len(parts[0]) > 1:
            out.add(":".join([parts[0].lstrip("0") or "0", *parts[1:2]]))
        for part in parts:
            out.add(part)
            out.add(part.lstrip("0") or "0")
    elif _INT.fullmatch(token) and token.startswith("0") and len(token) > 1:
        out.add(token.lstrip("0") or "0")
    elif (whole := _WHOLE_FLOAT.fullmatch(token)) is not None:
        out.add(whole.group(1))  # a float column value 37.0 grounds "37"


def _subtokens(token: str) -> frozenset[str]:
    """_expand of one well-formed token."""
    out: set[str] = set()
    _expand(token, out)
    return frozenset(out)


def tokens_of_text(text: str, out: set[str]) -> None:
    """Add every number token of an evidence text (with its sub-tokens) to `out`."""
    for raw in set(_NUMBER.findall(text)):  # evidence repeats numbers (dates, codes): expand each once
        if ":" in raw or "," in raw or raw[0] == "0" or raw.endswith(".0"):
            _expand(raw, out)
        else:
            out.add(raw)


def evidence_text(
    projection: Mapping[str, Any], effective_arguments: Mapping[str, Any], argument_keys: Iterable[str] | None
) -> str:
    """One call's grounding sources as one text: the projection minus its id fields, plus the chosen arguments.

    orjson with indentation puts every value on its own line, so array items never join into one number;
    escaped control characters are turned back into separators so `took\\n30s` still yields `30`.
    """
    parts = [{k: v for k, v in projection.items() if k not in NON_SOURCE_KEYS}]
    if argument_keys is not None:
        parts.append({k: effective_arguments[k] for k in argument_keys if k in effective_arguments})
    text = orjson.dumps(parts, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS, default=str).decode()
    if "\\" in text:
        text = text.replace("\\n", " \n").replace("\\t", " \t").replace("\\r", " \r")
    return text


def source_tokens(
    projection: Mapping[str, Any], effective_arguments: Mapping[str, Any], argument_keys: Iterable[str] | None
) -> frozenset[str]:
    """Every number token one call can ground (items, count, window, chosen arguments; never ids or timings).

    `argument_keys` None means no arguments are sources. EvidenceText answers the same question lazily.
    """
    out: set[str] = set()
    tokens_of_text(evidence_text(projection, effective_arguments, argument_keys), out)
    return frozenset(out)


def _search_forms(number: str) -> tuple[str, ...]:
    """Substrings under which a canonical number can appear in evidence (with or without thousands separators)."""
    whole, dot, fraction = number.partition(".")
    if len(whole) > 3 and whole.isdigit() and (not dot or fraction.isdigit()):
        return number, f"{int(whole):,}{dot}{fraction}"
    return (number,)


class EvidenceText:
    """One call's sources, searched lazily: only the places where a draft number occurs are tokenised.

    Same answer as `number in source_tokens(...)`, at the cost of a few str.find calls instead of a regex pass
    over every byte of evidence (the guard's hot path; see bench/bench_guard.py).
    """

    MAX_LOCAL_TRIES = 8
    MAX_OCCURRENCES = 64

    def __init__(self, text: str) -> None:
        self.text = text
        self._answers: dict[str, bool] = {}
        self._all: set[str] | None = None

    def grounds(self, number: str) -> bool:
        """True when the canonical number token (or an accepted sub-token form of it) occurs in this evidence."""
        answer = self._answers.get(number)
        if answer is None:
            answer = self._answers[number] = self._search(number)
        return answer

    def _search(self, number: str) -> bool:
        if self._all is not None:
            return number in self._all
        text, tries, seen = self.text, 0, 0
        size, find = len(text), text.find
        for form in _search_forms(number):
            length = len(form)
            at = find(form)
            while at >= 0:
                seen += 1
                # Inlined _aligned (the hot loop): not in the middle of a digit run, leading zeros aside.
                end = at + length
                if end >= size or not text[end].isdigit():
                    before = at - 1
                    while before >= 0 and text[before] == "0":
                        before -= 1
                    if before < 0 or not text[before].isdigit():
                        # Fast path (what _covers concludes first): the number itself, alone between characters
                        # that cannot extend a run, in a context the number regex accepts.
                        if (
                            form == number
                            and (at == 0 or text[at - 1] not in _RUN_CHARS)
                            and (end == size or text[end] not in _RUN_CHARS)
                            and _starts_number(text, at)
                            and text[end : end + 2].lower() != "xx"
                        ):
                            return True
                        if self._covers(at, length, number):
                            return True
                        tries += 1
                if tries >= self.MAX_LOCAL_TRIES or seen >= self.MAX_OCCURRENCES:
                    return self._full_pass(number)  # a very common number: one full pass is cheaper from here on
                at = find(form, at + 1)
        return False

    def _full_pass(self, number: str) -> bool:
        tokens: set[str] = set()
        tokens_of_text(self.text, tokens)
        self._all = tokens  # published complete: the object may be kept across checks (GuardCaches)
        return number in tokens

    def _covers(self, at: int, length: int, number: str) -> bool:
        """Tokenise just the run of number characters around one occurrence, with enough context for the rules."""
        text, lo = self.text, at
        while lo > 0 and text[lo - 1] in _RUN_CHARS:
            lo -= 1
        hi = _RUN_REST.match(text, at + length).end()  # type: ignore[union-attr]  # `*` always matches
        # Fast path: when the run (minus separators at its ends) is one well-formed token in a context the regex
        # accepts, it is the token; otherwise let the regex decide on just this stretch of text.
        start, end = lo, hi
        while start < end and text[start] in ".,:":
            start += 1
        while end > start and text[end - 1] in ".,:":
            end -= 1
        token = text[start:end]
        if start <= at and end >= at + length and _starts_number(text, start) and text[end : end + 2].lower() != "xx":
            if token == number:
                return True
            if _SIMPLE_RUN.fullmatch(token):
                return number in _subtokens(token)
        local: set[str] = set()
        for match in _NUMBER.finditer(text, lo, min(len(text), hi + 4)):
            if match.start(1) < at + length and match.end(1) > at:
                _expand(match.group(1), local)
        return number in local
