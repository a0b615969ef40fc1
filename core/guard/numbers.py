"""Numeric grounding: one tokenizer for draft text and evidence, so a number is grounded only if a tool showed it.

A number is a maximal run of digits possibly joined by `.`, `,` or `:` (`4.18.0`, `23:05:28`, `1,024`);
`92%` is `92`, `12s` is `12`, and a sentence-final `.` is not part of it. Digits glued *after* a letter,
digit or `_` belong to a word, not a number (`a1`, `p99`, `HikariPool1`, `call_12`, `k8s`), with two
exceptions: a lone `v` prefix (`v4.18.0` is the number `4.18.0`) and the `T` of an ISO timestamp
(`2026-11-29T23:05:28Z` yields `23:05:28`). After a `-` or a space digits are a number (`HikariPool-1` -> `1`).
HTTP status classes (`5xx`) are words. Thousands separators are normalised (`1,024` == `1024`).

Evidence sources are tokenised with the same rules, plus sub-tokens of times (`23:05:28.123` also yields
`23:05:28`, `23:05`, `23`, `05`, `5`, `28`) so natural phrasing ("at 23:05") grounds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

_NUMBER = re.compile(r"(?:(?<!\w)|(?<=\dT)|(?<=(?<!\w)[vV]))((?>\d+(?:[.,:]\d+)*))(?![xX]{2}\b)")
_THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_INT = re.compile(r"\d+")

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


def tokens_of_text(text: str, out: set[str]) -> None:
    """Add every number token of an evidence text (with its sub-tokens) to `out`."""
    for raw in _NUMBER.findall(text):
        _expand(canonical(raw), out)


def _leaves(value: Any, skip_keys: frozenset[str]) -> Iterator[str]:
    """Yield the string form of every string/number leaf of a JSON value (booleans and nulls excluded)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int):
        yield str(value)
    elif isinstance(value, float):
        yield repr(value)
        if value.is_integer():
            yield str(int(value))
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if key not in skip_keys:
                yield from _leaves(item, skip_keys)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _leaves(item, skip_keys)


def source_tokens(
    projection: Mapping[str, Any], effective_arguments: Mapping[str, Any], argument_keys: Iterable[str] | None
) -> frozenset[str]:
    """All number tokens one call can ground: its projection's leaves (items, count, window) and chosen arguments.

    `argument_keys` None means no arguments are sources; ids and timings are never sources.
    """
    texts = list(_leaves(projection, NON_SOURCE_KEYS))
    if argument_keys is not None:
        for key in argument_keys:
            if key in effective_arguments:
                texts.extend(_leaves(effective_arguments[key], frozenset()))
    out: set[str] = set()
    # One regex pass over the joined leaves: far cheaper than one pass per leaf.
    tokens_of_text("\n".join(texts), out)
    return frozenset(out)
