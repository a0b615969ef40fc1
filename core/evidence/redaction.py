"""Secret redaction for anything shown outside the canonical record: precompiled single-pass regexes."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

REDACTED = "[REDACTED]"

# Names whose values are secrets end with one of these words: `db_password`, `SLACK_BOT_TOKEN`, `api-key`...
# The keyword must end the name, so `max_tokens` or `password_policy` are not secrets.
_SECRET_WORD = (
    r"(?:password|passwd|passphrase|pwd|secret|secret[_-]?key[_-]?base|api[_-]?key|apikey|access[_-]?key"
    r"|account[_-]?key|private[_-]?key|token|credentials?|session[_-]?id|cookie)"
)
_SECRET_KEY_RE = re.compile(rf"(?i)[\w.-]*?{_SECRET_WORD}")

_VALUE = r"""(?:"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|\[REDACTED[A-Z ]*\]|[^\s,;&"'}\])]+)"""

# (name, words one of which must occur in the lower-cased text, pattern). Order matters: at one position the
# first alternative that matches wins. Only rules whose words occur in the text are compiled into the scan.
_RULES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    # A block cut before its END line (by a size cap upstream) is still hidden up to the end of the text.
    ("pem", ("-----begin",),
     r"(?P<pem>-----BEGIN[A-Z0-9 ]*PRIVATE\ KEY-----(?:[\s\S]*?-----END[A-Z0-9 ]*PRIVATE\ KEY-----|[\s\S]*))"),
    # The user part may be empty: `redis://:password@host` is the usual REDIS_URL form.
    ("dsn", ("://",), r"(?P<dsn>://[^:/@\s\"']*:)(?P<dsn_pass>[^@\s/\"']+)(?=@)"),
    ("auth", ("authorization",),
     r"(?P<auth>authorization[\"']?\s*[:=]\s*)(?P<auth_val>\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'|[^\r\n,;\"']+)"),
    ("kv", ("pass", "pwd", "secret", "key", "token", "credential", "session", "cookie"),
     rf"(?P<kv>{_SECRET_WORD}[\"']?\s*[:=]\s*)(?P<kv_val>{_VALUE})"),
    ("bearer", ("bearer",), r"(?P<bearer>bearer\s+)(?P<bearer_val>(?=[A-Za-z._~+/=-]*[0-9])[A-Za-z0-9._~+/=-]{8,})"),
    ("jwt", ("eyj",), r"(?-i:(?P<jwt>\beyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}))"),
    ("aws", ("akia", "asia"), r"(?-i:(?P<aws>\b(?:AKIA|ASIA)[0-9A-Z]{16}\b))"),
    ("slack", ("xox", "xapp-"), r"(?-i:(?P<slack>\b(?:xox[abposr]|xapp)-[A-Za-z0-9-]{10,}))"),
    ("openai", ("sk-",), r"(?-i:(?P<openai>\bsk-(?:proj-|live-|test-|ant-)?[A-Za-z0-9_-]{20,}))"),
    ("github", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"(?-i:(?P<github>\bgh[pousr]_[A-Za-z0-9]{30,}))"),
)


def _trigger_pattern(words: list[str]) -> re.Pattern[str]:
    """One case-sensitive alternation of every rule word (matched against lower-cased text), factored by first
    character so the regex engine rejects most positions after one comparison."""
    by_first: dict[str, list[str]] = {}
    for word in sorted(set(words)):
        by_first.setdefault(word[0], []).append(re.escape(word[1:]))
    branches = [re.escape(first) + (f"(?:{'|'.join(rests)})" if len(rests) > 1 else rests[0])
                for first, rests in by_first.items()]
    return re.compile("|".join(branches))


# Prefilter: a text in which no rule word occurs cannot contain a secret (every rule needs one of its words), so
# the common case, an ordinary log line, costs one lower() and one regex search.
_TRIGGER_RE = _trigger_pattern([word for _, words, _ in _RULES for word in words])


@lru_cache(maxsize=256)
def _pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    """One alternation of the rules that can match this text (compiled once per combination)."""
    return re.compile("|".join(p for n, _, p in _RULES if n in names), re.IGNORECASE)


def _quoted_marker(value: str, marker: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return f"{value[0]}{marker}{value[0]}"
    return marker


def _replace(match: re.Match[str]) -> str:
    kind = match.lastgroup
    groups = match.groupdict()
    if groups.get("pem") is not None:
        return "[REDACTED PRIVATE KEY]"
    if groups.get("dsn") is not None:
        return f"{groups['dsn']}***"
    if groups.get("auth") is not None:
        return groups["auth"] + _quoted_marker(groups["auth_val"], REDACTED)
    if groups.get("kv") is not None:
        value = groups["kv_val"]
        bare = value.strip("\"'")
        if not bare or bare == "***" or bare.startswith("[REDACTED"):
            return match.group(0)
        return groups["kv"] + _quoted_marker(value, REDACTED)
    if groups.get("bearer") is not None:
        return groups["bearer"] + REDACTED
    labels = {"jwt": "[REDACTED JWT]", "aws": "[REDACTED AWS KEY]", "slack": "[REDACTED SLACK TOKEN]",
              "openai": "[REDACTED API KEY]", "github": "[REDACTED GITHUB TOKEN]"}
    return labels.get(kind or "", REDACTED)


def redact(text: str) -> str:
    """Replace passwords, tokens, keys and DSN credentials in text with [REDACTED] markers."""
    if not text:
        return text
    lowered = text.lower()
    if _TRIGGER_RE.search(lowered) is None:
        return text
    names = tuple(name for name, words, _ in _RULES if any(word in lowered for word in words))
    if not names:
        return text
    return _pattern(names).sub(_replace, text)


@lru_cache(maxsize=4096)
def _secret_key(key: str) -> bool:
    return _SECRET_KEY_RE.fullmatch(key) is not None


def is_secret_key(key: str) -> bool:
    """True when a mapping key names a secret (its value must never be shown); cached for short keys."""
    if len(key) <= 64:
        return _secret_key(key)
    return _SECRET_KEY_RE.fullmatch(key) is not None


def redact_value(obj: Any) -> Any:
    """Redact a JSON value recursively: strings are scrubbed, values under secret-named keys are replaced."""
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        out: dict[Any, Any] = {}
        for key, value in obj.items():
            if isinstance(key, str) and is_secret_key(key) and value not in (None, "", [], {}):
                out[key] = REDACTED
            else:
                out[key] = redact_value(value)
        return out
    if isinstance(obj, list | tuple):
        return [redact_value(item) for item in obj]
    return obj
