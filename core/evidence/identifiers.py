"""Identifiers that look random but are not secrets: Kubernetes object names, image tags, class and resource paths.

`Pod/payments-api-7f9dd8b6c4-x7gr9` or `/subscriptions/<uuid>/resourceGroups/rg-prod` are long runs of the token
alphabet with upper case, lower case and digits, so an entropy rule alone takes them for keys. What tells them apart
is their structure: separators (`/ - _ . :`) cut them into parts that are each a word (`payments`, `ReplicaSet`,
`resourceGroups`), lower-case alphanumerics (Kubernetes' hash suffixes `7f9dd8b6c4`, `x7gr9`), hex, or a short
upper-case code (`API`, `V2`). A random token's parts are none of these: a mix of cases and digits inside one part.
"""

from __future__ import annotations

import re

_SEPARATORS = re.compile(r"[/\-_.:]+")
_PART = re.compile(
    r"[A-Z]?[a-z]+(?:[A-Z][a-z]+)*[0-9]{0,3}"  # a word or CamelCase words, maybe numbered: ReplicaSet, http2, v1
    r"|[a-z0-9]+"  # lower-case alphanumerics: Kubernetes hashes and names
    r"|[0-9A-F]+"  # upper-case hex
    r"|[A-Z0-9]{1,6}"  # a short code: API, V2, EU1
)
_PIECE = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_WORD_PIECE = re.compile(r"[A-Z]?[a-z]*[aeiouy][a-z]*")
_WORDY_SHARE = 0.75
_MEAN_WORD = 4.5
"""A CamelCase part with codes inside (PaymentsApiV2ReplicaSet) is words for at least this share of its characters,
and its words are words: each has a vowel and they are 4.5 letters long on average. A random token's case changes
every character or two, so its 'words' are short (AaaBaaCbc...: hypothesis found that shape)."""


def _wordy(part: str) -> bool:
    pieces = _PIECE.findall(part)
    if sum(len(p) for p in pieces) != len(part):
        return False
    words = [p for p in pieces if len(p) >= 2 and _WORD_PIECE.fullmatch(p)]
    letters = sum(len(w) for w in words)
    return bool(words) and letters >= _WORDY_SHARE * len(part) and letters / len(words) >= _MEAN_WORD


def is_identifier(token: str) -> bool:
    """True when the token is made of (separated) parts that are each word-like (see the module doc)."""
    parts = [p for p in _SEPARATORS.split(token) if p]
    return bool(parts) and all(_PART.fullmatch(part) is not None or _wordy(part) for part in parts)
