"""Secret redaction for anything shown outside the canonical record, by the rule set of core/evidence/secrets/.

A text is scanned by the rules whose keywords occur in it (plus the few keyword-free ones), every finding's secret is
replaced by "[redacted]", and a known type prefix is kept ("sk_live_…[redacted]"). Redaction is idempotent: a second
pass changes nothing. `Redactor` adds a bounded per-instance memo (tool output repeats the same values across items).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.evidence.identifiers import is_identifier
from core.evidence.secrets.ruleset import SecretRule, SecretRuleSet, load_ruleset

REDACTED = "[redacted]"
KEPT = "…" + REDACTED
"""What follows a kept type prefix: sk_live_…[redacted]."""

# Type prefixes that say what a secret was without revealing any of it; the longest that starts the secret is kept.
KEPT_PREFIXES: tuple[str, ...] = tuple(sorted((
    "sk_live_", "sk_test_", "sk_prod_", "rk_live_", "rk_test_", "rk_prod_", "whsec_", "AIza", "github_pat_",
    "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "glpat-", "xoxb-", "xoxp-", "xoxa-", "xoxs-", "xoxr-", "xoxe-", "xapp-",
    "SG.", "AKIA", "ASIA", "sk-proj-", "sk-ant-", "sk-svcacct-", "sk-", "npm_", "pypi-", "dop_v1_", "shpat_", "shpss_",
    "hf_", "https://hooks.slack.com/", "hooks.slack.com/", "-----BEGIN", "eyJ",
), key=len, reverse=True))

# Mapping keys and SQL column names that name a secret: the value is hidden whatever it looks like. The word must end
# the name, so `max_tokens` or `password_policy` are not secrets.
_SECRET_KEY_RE = re.compile(
    r"(?i)[\w.-]*?(?:password|passwd|passphrase|pwd|secret|secret[_-]?key[_-]?base|api[_-]?key|apikey|access[_-]?key"
    r"|account[_-]?key|private[_-]?key|signing[_-]?key|token|credentials?|session[_-]?id|cookie|authorization"
    r"|authentication_string|password_hash|[_.-]pass|[_.-]auth|auth)"
)
_MEMO_TEXT_CHARS = 2048


@dataclass(frozen=True)
class Finding:
    """One secret in a text: its span, the rule that found it and how many leading characters may stay."""

    start: int
    end: int
    rule_id: str
    keep: int


def shannon_entropy(text: str) -> float:
    """Bits per character of the text's character distribution (gitleaks' and detect-secrets' measure)."""
    if not text:
        return 0.0
    size = len(text)
    return -sum(n / size * math.log2(n / size) for n in Counter(text).values())


_KEPT_RE = re.compile("|".join(re.escape(p) for p in KEPT_PREFIXES).encode())  # longest first: the longest prefix wins


_KEPT_FIRST = frozenset(p.encode()[0] for p in KEPT_PREFIXES)


def _kept(secret: bytes) -> int:
    if not secret or secret[0] not in _KEPT_FIRST:
        return 0
    match = _KEPT_RE.match(secret)
    return match.end() if match is not None and len(secret) > match.end() + 3 else 0


_REDACTED_B = REDACTED.encode()
_KEPT_B = KEPT.encode()


def _already_redacted(data: bytes, start: int, end: int) -> bool:
    """A span that starts in (or just before) one of our markers, contains one, or ends where one follows was
    redacted before: leaving it alone makes redaction idempotent."""
    lo = max(0, start - len(_REDACTED_B) + 1)
    at = data.find(_REDACTED_B[:-1], lo, start + len(_KEPT_B))
    if at != -1 and at <= start + 1:
        return True
    return data.find(_KEPT_B[:-1], start, end) != -1 or data.startswith(_KEPT_B, end) or data.startswith(_REDACTED_B, end)


def _secret_span(spans: Sequence[tuple[int, int]]) -> tuple[int, int]:
    """The first group that took part and is not empty, else the whole match."""
    for group in spans[1:]:
        if group[1] > group[0]:
            return group
    return spans[0]


_LINE_CONTEXT = 1024
"""Bytes of a match's line an allowlist sees on each side (a bound: one 100 KB line with many matches stays linear)."""


def _line(data: bytes, start: int, end: int) -> bytes:
    lo, hi = max(0, start - _LINE_CONTEXT), min(len(data), end + _LINE_CONTEXT)
    begin, stop = data.rfind(b"\n", lo, start), data.find(b"\n", end, hi)
    return data[lo if begin == -1 else begin + 1 : hi if stop == -1 else stop]


_QUOTES = frozenset(b"\"'`")
_NAME_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def _whole_match(data: bytes, match: tuple[int, int], lead: int) -> bytes:
    """The match widened back over up to `lead` name characters (what the rule matched before its lead was dropped)."""
    start, end = match
    floor = max(0, start - lead)
    while start > floor and data[start - 1] in _NAME_BYTES:
        start -= 1
    return data[start:end]


def _allowed(data: bytes, match: tuple[int, int], rule: SecretRule, raw: bytes) -> bool:
    if rule.entropy or rule.words_only:
        text = raw.decode("utf-8", "replace")
        if rule.entropy and shannon_entropy(text) <= rule.entropy_floor(len(text)):
            return True
        if rule.words_only and is_identifier(text):
            return True
    if not rule.allowlists:
        return False
    if not rule.allowlists_see_context:
        return any(a.allows(raw, _NOTHING, _NOTHING) for a in rule.allowlists)
    return any(a.allows(raw, lambda: _whole_match(data, match, rule.lead), lambda: _line(data, *match))
               for a in rule.allowlists)


def _NOTHING() -> bytes:
    return b""


_Hit = tuple[int, int, int, str]
"""A finding while scanning: (start, -end, kept prefix length, rule id), so that plain tuple order is the order the
replacement needs (by start, the longest span first)."""


def _rule_findings(data: bytes, rule: SecretRule, marked: bool, found: list[_Hit]) -> None:
    """Every finding of one rule, left to right. Where a match consumed characters after its secret (a boundary such
    as gitleaks' terminator), the next search starts at the secret's end, so a secret right after another is found."""
    find = rule.find
    checked = bool(rule.entropy or rule.words_only or rule.allowlists)
    group = rule.secret_group if 0 < rule.secret_group <= rule.regex.groups else 0
    pos, size = 0, len(data)
    while pos <= size:
        spans = find(data, pos)
        match = spans[0]
        if match[0] < 0:
            break
        start, end = spans[group] if group else _secret_span(spans)
        while end - 1 > start and data[end - 1] in _QUOTES:
            end -= 1  # a closing quote is the value's delimiter
        if start >= 0 and end > start and not (marked and _already_redacted(data, start, end)):
            raw = data[start:end]
            if not (checked and _allowed(data, match, rule, raw)):
                found.append((start, -end, _kept(raw), rule.id))
        following = end if match[0] < end < match[1] else match[1]
        pos = following if following > pos else pos + 1


def _byte_findings(data: bytes, rules: SecretRuleSet) -> list[_Hit]:
    found: list[_Hit] = []
    marked = _REDACTED_B[1:-1] in data  # only a text holding a marker needs the idempotence checks
    for rule in rules.rules_for(data.lower()):
        _rule_findings(data, rule, marked, found)
    found.sort()
    return found


def _char_offsets(data: bytes, offsets: Sequence[int]) -> dict[int, int]:
    """Byte offset -> character offset for each of the (sorted) offsets, in one pass over the text."""
    out: dict[int, int] = {}
    last_byte, last_char = 0, 0
    for offset in sorted(set(offsets)):
        last_char += len(data[last_byte:offset].decode("utf-8", "replace"))
        last_byte = offset
        out[offset] = last_char
    return out


def find_secrets(text: str, rules: SecretRuleSet) -> list[Finding]:
    """Every secret the rules find in the text (character offsets), ordered by position (spans may overlap)."""
    data = _encode(text)
    hits = _byte_findings(data, rules)
    if len(data) == len(text):
        return [Finding(start, -end, rule_id, keep) for start, end, keep, rule_id in hits]
    chars = _char_offsets(data, [o for start, end, _, _ in hits for o in (start, -end)])
    return [Finding(chars[start], chars[-end], rule_id, keep) for start, end, keep, rule_id in hits]


def _apply(data: bytes, hits: Sequence[_Hit]) -> bytes:
    """Replace each group of overlapping spans by one marker (keeping the first span's type prefix)."""
    parts: list[bytes] = []
    cursor = 0
    index, count = 0, len(hits)
    while index < count:
        first_start, first_end, keep, _ = hits[index]
        end = -first_end
        index += 1
        while index < count and hits[index][0] < end:
            end = max(end, -hits[index][1])
            index += 1
        start = max(first_start, cursor)
        parts.append(data[cursor:start])
        parts.append(data[start : start + keep] + _KEPT_B if keep and start == first_start else _REDACTED_B)
        cursor = max(cursor, end)
    parts.append(data[cursor:])
    return b"".join(parts)


def _encode(text: str) -> bytes:
    # surrogatepass: a lone surrogate (possible in JSON-decoded tool output) round-trips instead of raising
    return text.encode("utf-8", "surrogatepass")


def redact_text(text: str, rules: SecretRuleSet) -> str:
    """The text with every secret the rules find replaced by a marker."""
    if not text:
        return text
    data = _encode(text)
    findings = _byte_findings(data, rules)
    return _apply(data, findings).decode("utf-8", "surrogatepass") if findings else text


_PAIR_NAME_KEYS = frozenset({"name", "key", "param", "parameter", "setting", "variable", "var", "env", "field",
                             "property", "option", "config_key", "setting_name", "parameter_name"})
_PAIR_VALUE_KEYS = frozenset({"value", "val", "data", "secret", "content", "setting_value", "config_value",
                              "parameter_value", "string_value", "secure_string"})


def paired_secret_keys(mapping: dict[Any, Any]) -> set[str]:
    """The value fields of a key/value record whose name field names a secret: {"name": "smtp_password", "value": x}
    (Kubernetes env entries, SSM parameters, config tables as JSON) -> {"value"}."""
    named = any(isinstance(k, str) and k.lower() in _PAIR_NAME_KEYS and isinstance(v, str) and len(v) <= 200
                and is_secret_key(v.replace(" ", "_")) for k, v in mapping.items())
    if not named:
        return set()
    return {k for k in mapping if isinstance(k, str) and k.lower() in _PAIR_VALUE_KEYS}


class SecretKeyNames:
    """Whether a mapping key or column name names a secret, with a bounded memo owned by this instance (a process
    sees the same few hundred field and column names over and over; the regex costs ~10 us). `SECRET_KEYS` is the
    process's one, like DEFAULT_RULES. `hidden` applies it to a whole mapping, what its keys say worked out once per
    distinct key tuple (tool output and reports repeat the same few shapes)."""

    MEMO_ENTRIES = 8192
    MEMO_CHARS = 64
    SHAPE_ENTRIES = 1024
    SHAPE_KEYS = 64
    SHAPE_CHARS = 2048

    def __init__(self) -> None:
        self._memo: dict[str, bool] = {}
        self._shapes: dict[tuple[Any, ...], _Shape] = {}

    def __call__(self, key: str) -> bool:
        if len(key) > self.MEMO_CHARS:
            return len(key) <= 200 and _SECRET_KEY_RE.fullmatch(key) is not None
        found = self._memo.get(key)
        if found is None:
            found = _SECRET_KEY_RE.fullmatch(key) is not None
            if len(self._memo) >= self.MEMO_ENTRIES:
                self._memo.clear()  # atomic: projection threads and the loop share it
            self._memo[key] = found
        return found

    def hidden(self, mapping: Mapping[Any, Any]) -> frozenset[str]:
        """The keys whose values must not be shown: those that name a secret and the value fields of a key/value
        record whose name field names one (paired_secret_keys)."""
        keys = tuple(mapping)
        shape = self._shapes.get(keys)
        if shape is None:
            strings = [k for k in keys if isinstance(k, str)]
            shape = _Shape(secret=frozenset(k for k in strings if self(k)),
                           names=tuple(k for k in strings if k.lower() in _PAIR_NAME_KEYS),
                           values=frozenset(k for k in strings if k.lower() in _PAIR_VALUE_KEYS))
            # Only small key sets are remembered: the memo's memory stays bounded whatever a tool returns.
            if len(keys) <= self.SHAPE_KEYS and sum(map(len, strings)) <= self.SHAPE_CHARS:
                if len(self._shapes) >= self.SHAPE_ENTRIES:
                    self._shapes.clear()  # atomic, as the memo
                self._shapes[keys] = shape
        if shape.names and shape.values and any(
                isinstance(v := mapping[k], str) and len(v) <= 200 and self(v.replace(" ", "_")) for k in shape.names):
            return shape.secret | shape.values
        return shape.secret


@dataclass(frozen=True)
class _Shape:
    """What a mapping's keys say, for SecretKeyNames.hidden: the keys that name a secret, the name fields of a
    key/value record and its value fields."""

    secret: frozenset[str]
    names: tuple[str, ...]
    values: frozenset[str]


SECRET_KEYS = SecretKeyNames()


def is_secret_key(key: str) -> bool:
    """True when a mapping key or column name names a secret (its value must never be shown)."""
    return SECRET_KEYS(key)


_LEAVES = frozenset({int, float, bool, type(None)})


class Redactor:
    """Redaction by one rule set with a bounded memo (text -> redacted text) owned by this instance."""

    def __init__(self, rules: SecretRuleSet | None = None, memo_entries: int = 4096) -> None:
        self.rules = rules if rules is not None else DEFAULT_RULES
        self._memo: dict[str, str] = {}
        self._memo_entries = memo_entries

    def __call__(self, text: str) -> str:
        """The text with every secret replaced by a marker."""
        return self.redact(text)

    def redact(self, text: str) -> str:
        """The text with every secret replaced by a marker (short texts are remembered)."""
        if len(text) > _MEMO_TEXT_CHARS:
            return redact_text(text, self.rules)
        out = self._memo.get(text)
        if out is None:
            out = redact_text(text, self.rules)
            if len(self._memo) >= self._memo_entries:
                self._memo.clear()  # atomic, so a projection thread and the loop may share one instance
            self._memo[text] = out
        return out

    def redact_value(self, obj: Any) -> Any:
        """Redact a JSON value recursively: strings are scrubbed, values under secret-named keys are replaced.

        Values under a key that names a secret (is_secret_key) or under the value field of a record whose name field
        names one (paired_secret_keys) become the marker unless empty; what the keys say is worked out once per
        distinct key tuple (SecretKeyNames.hidden), the values' part per mapping."""
        kind = type(obj)
        if kind is str:
            return self.redact(obj)
        if kind in _LEAVES:
            return obj
        if isinstance(obj, dict):
            return self._redact_mapping(obj)
        if isinstance(obj, str):
            return self.redact(obj)
        if isinstance(obj, list | tuple):
            memo, redact, value_of = self._memo, self.redact, self.redact_value
            # A remembered text is looked up here (redact's own first step), not in a call per string.
            return [(memo.get(item) or redact(item)) if type(item) is str else item if type(item) in _LEAVES
                    else value_of(item) for item in obj]
        return obj

    def _redact_mapping(self, obj: dict[Any, Any]) -> dict[Any, Any]:
        hidden = SECRET_KEYS.hidden(obj)
        memo, redact, value_of = self._memo, self.redact, self.redact_value
        if not hidden:
            return {key: (memo.get(value) or redact(value)) if type(value) is str else value
                    if type(value) in _LEAVES else value_of(value) for key, value in obj.items()}
        return {key: REDACTED if key in hidden and value not in (None, "", [], {}) else value_of(value)
                for key, value in obj.items()}


DEFAULT_RULES: SecretRuleSet = load_ruleset()
"""The shipped rule set (immutable; loaded once at import)."""


def redact(text: str) -> str:
    """Replace every secret in the text with a marker, by the shipped rule set (no memo)."""
    return redact_text(text, DEFAULT_RULES)


def redact_value(obj: Any) -> Any:
    """Redact a JSON value recursively by the shipped rule set (no memo across calls)."""
    return Redactor(DEFAULT_RULES, memo_entries=256).redact_value(obj)
