"""Secret redaction for anything shown outside the canonical record, by the rule set of core/evidence/secrets/.

A text is scanned by the rules whose keywords occur in it (plus the few keyword-free ones), every finding's secret is
replaced by "[redacted]", and a known type prefix is kept ("sk_live_…[redacted]"). Redaction is idempotent: a second
pass changes nothing. `Redactor` adds a bounded per-instance memo (tool output repeats the same values across items).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

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


_KEPT_RE = re.compile("|".join(re.escape(p) for p in KEPT_PREFIXES))  # longest first: the longest prefix wins


def _kept(secret: str) -> int:
    match = _KEPT_RE.match(secret)
    return match.end() if match is not None and len(secret) > match.end() + 3 else 0


def _already_redacted(text: str, start: int, end: int) -> bool:
    """A span that starts in (or just before) one of our markers, contains one, or ends where one follows was
    redacted before: leaving it alone makes redaction idempotent."""
    lo = max(0, start - len(REDACTED) + 1)
    at = text.find(REDACTED[:-1], lo, start + len(KEPT))
    if at != -1 and at <= start + 1:
        return True
    return KEPT[:-1] in text[start:end] or text.startswith(KEPT, end) or text.startswith(REDACTED, end)


def _secret_span(match: re.Match[str], rule: SecretRule) -> tuple[int, int]:
    if rule.secret_group and rule.secret_group <= (match.re.groups or 0):
        return match.span(rule.secret_group)
    for index in range(1, (match.re.groups or 0) + 1):
        if match.group(index):
            return match.span(index)
    return match.span(0)


def _line(text: str, start: int, end: int) -> str:
    return text[text.rfind("\n", 0, start) + 1 : (len(text) if (stop := text.find("\n", end)) == -1 else stop)]


_NAME_CHAR = re.compile(r"[\w.-]")


def _whole_match(text: str, match: re.Match[str], lead: int) -> str:
    """The match widened back over up to `lead` name characters (what the rule matched before its lead was dropped)."""
    start = match.start()
    floor = max(0, start - lead)
    while start > floor and _NAME_CHAR.match(text, start - 1):
        start -= 1
    return text[start : match.end()]


def _rule_findings(text: str, rule: SecretRule) -> list[Finding]:
    found: list[Finding] = []
    for match in rule.regex.finditer(text):
        start, end = _secret_span(match, rule)
        if start < 0 or start == end or _already_redacted(text, start, end):
            continue
        secret = text[start:end]
        if rule.entropy and shannon_entropy(secret) <= rule.entropy:
            continue
        if rule.allowlists and any(a.allows(secret, _whole_match(text, match, rule.lead), _line(text, *match.span()))
                                   for a in rule.allowlists):
            continue
        found.append(Finding(start, end, rule.id, _kept(secret)))
    return found


def find_secrets(text: str, rules: SecretRuleSet) -> list[Finding]:
    """Every secret the rules find in the text, ordered by position (spans may overlap)."""
    findings: list[Finding] = []
    for rule in rules.rules_for(text.lower()):
        findings.extend(_rule_findings(text, rule))
    findings.sort(key=lambda f: (f.start, -f.end))
    return findings


def _apply(text: str, findings: Sequence[Finding]) -> str:
    """Replace each group of overlapping spans by one marker (keeping the first span's type prefix)."""
    parts: list[str] = []
    cursor = 0
    index = 0
    while index < len(findings):
        first = findings[index]
        end = first.end
        index += 1
        while index < len(findings) and findings[index].start < end:
            end = max(end, findings[index].end)
            index += 1
        start = max(first.start, cursor)
        parts.append(text[cursor:start])
        parts.append(text[start : start + first.keep] + KEPT if first.keep and start == first.start else REDACTED)
        cursor = max(cursor, end)
    parts.append(text[cursor:])
    return "".join(parts)


def redact_text(text: str, rules: SecretRuleSet) -> str:
    """The text with every secret the rules find replaced by a marker."""
    if not text:
        return text
    findings = find_secrets(text, rules)
    return _apply(text, findings) if findings else text


def is_secret_key(key: str) -> bool:
    """True when a mapping key or column name names a secret (its value must never be shown)."""
    return len(key) <= 200 and _SECRET_KEY_RE.fullmatch(key) is not None


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
        """Redact a JSON value recursively: strings are scrubbed, values under secret-named keys are replaced."""
        if isinstance(obj, str):
            return self.redact(obj)
        if isinstance(obj, dict):
            out: dict[Any, Any] = {}
            for key, value in obj.items():
                if isinstance(key, str) and is_secret_key(key) and value not in (None, "", [], {}):
                    out[key] = REDACTED
                else:
                    out[key] = self.redact_value(value)
            return out
        if isinstance(obj, list | tuple):
            return [self.redact_value(item) for item in obj]
        return obj


DEFAULT_RULES: SecretRuleSet = load_ruleset()
"""The shipped rule set (immutable; loaded once at import)."""


def redact(text: str) -> str:
    """Replace every secret in the text with a marker, by the shipped rule set (no memo)."""
    return redact_text(text, DEFAULT_RULES)


def redact_value(obj: Any) -> Any:
    """Redact a JSON value recursively by the shipped rule set (no memo across calls)."""
    return Redactor(DEFAULT_RULES, memo_entries=256).redact_value(obj)
