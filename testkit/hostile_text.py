"""Hostile inputs for the secret rules: for each rule, texts built to make a backtracking engine go quadratic.

A regex engine that backtracks goes quadratic (or worse) when many start positions each begin a long partial match
that fails at the end: `"://a:"` repeated (every `://` starts a DSN whose password runs to the end of the text and
never meets an `@`), a keyword followed by a separator repeated, a run of value characters without a terminator.
`hostile_texts(rule)` builds those shapes from the rule's own keywords plus the shapes every rule family shares;
the test (tests/unit/test_redaction_linear.py) and the bench (bench/bench_redaction_hostile.py) feed each of them.
"""

from __future__ import annotations

from collections.abc import Iterator

from core.evidence.secrets.ruleset import SecretRule

SIZE = 100_000
"""Characters of each hostile text."""

# Shapes of the rule families (DSNs, key=value, quoted values, PEM blocks, tables, commands, tokens): each is repeated.
COMMON_UNITS: tuple[str, ...] = (
    "://a:", "://a:b", "://" + "a" * 30, "a:", "a@", ":@", '"', "'", "\\", "=", "==", "a=", "a:\"", "\\\"",
    "-----BEGIN PRIVATE KEY-----", "-----END PRIVATE KEY-----", "MII", "A", "aB3", "aB3-", "/aB3",
    "| password ", "name: password\n", "name=password,", "value=a,", "password: a ", "password=\"a",
    "xoxb-", "sk-", "SG.a", "AKIA", "ghp_", "$2b$12$", "*0", "IDENTIFIED BY '", "curl -u a:", "mysql -p",
    "Bearer a", "authorization: ", "the password is a", "a\n", " ", "eyJ", "key=", "token ",
)


def _repeat(unit: str, size: int = SIZE) -> str:
    return (unit * (size // max(1, len(unit)) + 1))[:size]


def rule_units(rule: SecretRule) -> list[str]:
    """The units built from one rule's keywords: keyword then separator, keyword then a value that never ends."""
    units: list[str] = []
    for word in rule.keywords or ("a",):
        units += [word, word + "=", word + ":a", word + ' "', word + "=a" + "b" * 40, word.upper() + "_", word + "://a:"]
    return units


def hostile_texts(rule: SecretRule, size: int = SIZE) -> Iterator[tuple[str, str]]:
    """(label, text) pairs: each of the rule's own units and each common unit repeated to `size` characters, and one
    keyword followed by one unterminated value of the whole size."""
    for unit in rule_units(rule):
        yield f"({unit!r})*", _repeat(unit, size)
    for word in rule.keywords[:1] or ("password",):
        yield f"{word!r}=a...", (word + "=" + "a" * size)[:size]
        yield f"{word!r} then noise", (word + " " + _repeat("a:b@", size))[:size]


def common_texts(size: int = SIZE) -> Iterator[tuple[str, str]]:
    """(label, text) pairs of the common units, each repeated to `size` characters."""
    for unit in COMMON_UNITS:
        yield f"({unit!r})*", _repeat(unit, size)
