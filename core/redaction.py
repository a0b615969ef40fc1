"""Secret redaction for anything shown outside the canonical record: one precompiled single-pass regex."""

from __future__ import annotations

import re
from typing import Any

REDACTED = "[REDACTED]"

# Key names whose values are secrets: `db_password`, `SLACK_BOT_TOKEN`, `aws_secret_access_key`, `api-key`...
# The keyword must end the name, so `max_tokens` or `password_policy` are not secrets.
_SECRET_NAME = (
    r"[\w.-]*?(?:password|passwd|pwd|secret|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
    r"|token|credentials?|session[_-]?id|cookie)"
)
_SECRET_KEY_RE = re.compile(rf"(?i){_SECRET_NAME}")

_QUOTED_DQ = r'"(?:[^"\\\n]|\\.)*"'
_QUOTED_SQ = r"'[^'\n]*'"
_BARE = r"""\[REDACTED[A-Z ]*\]|[^\s,;&"'}\])]+"""

# Order matters: at one position the first alternative that matches wins.
_PATTERN = re.compile(
    r"""
    (?P<pem>-----BEGIN[A-Z0-9 ]*PRIVATE\ KEY-----(?:[\s\S]*?-----END[A-Z0-9 ]*PRIVATE\ KEY-----|[\s\S]*))
  | (?P<dsn>\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^:/@\s"']+:)(?P<dsn_pass>[^@\s/"']+)(?=@)
  | (?P<auth>(?P<aq>["']?)\b(?:proxy-)?authorization(?P=aq)\s*[:=]\s*)
        (?P<auth_val>"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|[^\r\n,;"']+)
  | (?P<kv>(?<![\w.-])(?P<kq>["']?)"""
    + _SECRET_NAME
    + r"""(?P=kq)\s*[:=]\s*)(?P<kv_val>"""
    + _QUOTED_DQ
    + "|"
    + _QUOTED_SQ
    + "|"
    + _BARE
    + r""")
  | (?P<bearer>\bbearer\s+)(?P<bearer_val>(?=[A-Za-z._~+/=-]*[0-9])[A-Za-z0-9._~+/=-]{8,})
  | (?P<jwt>\beyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,})
  | (?P<aws>\b(?:AKIA|ASIA)[0-9A-Z]{16}\b)
  | (?P<slack>\b(?:xox[abposr]|xapp)-[A-Za-z0-9-]{10,})
  | (?P<openai>\bsk-(?:proj-|live-|test-|ant-)?[A-Za-z0-9_-]{20,})
  | (?P<github>\bgh[pousr]_[A-Za-z0-9]{30,})
    """,
    re.IGNORECASE | re.VERBOSE,
)

# A quick filter: text with none of these characters/words cannot match, so most log lines skip the big regex.
_HINT = re.compile(
    r"(?i)-----BEGIN|://|authorization|pass|pwd|secret|key|token|credential|session|cookie|bearer|eyJ|AKIA|ASIA|xox|xapp|sk-|gh[pousr]_"
)


def _quoted_marker(value: str, marker: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return f"{value[0]}{marker}{value[0]}"
    return marker


def _replace(match: re.Match[str]) -> str:
    kind = match.lastgroup
    groups = match.groupdict()
    if groups["pem"] is not None:
        return "[REDACTED PRIVATE KEY]"
    if groups["dsn"] is not None:
        return f"{groups['dsn']}***"
    if groups["auth"] is not None:
        return groups["auth"] + _quoted_marker(groups["auth_val"], REDACTED)
    if groups["kv"] is not None:
        value = groups["kv_val"]
        bare = value.strip("\"'")
        if not bare or bare == "***" or bare.startswith("[REDACTED"):
            return match.group(0)
        return groups["kv"] + _quoted_marker(value, REDACTED)
    if groups["bearer"] is not None:
        return groups["bearer"] + REDACTED
    labels = {"jwt": "[REDACTED JWT]", "aws": "[REDACTED AWS KEY]", "slack": "[REDACTED SLACK TOKEN]",
              "openai": "[REDACTED API KEY]", "github": "[REDACTED GITHUB TOKEN]"}
    return labels.get(kind or "", REDACTED)


def redact(text: str) -> str:
    """Replace passwords, tokens, keys and DSN credentials in text with [REDACTED] markers."""
    if not text or _HINT.search(text) is None:
        return text
    return _PATTERN.sub(_replace, text)


def is_secret_key(key: str) -> bool:
    """True when a mapping key names a secret (its value must never be shown)."""
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
