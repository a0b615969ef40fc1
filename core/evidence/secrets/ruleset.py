"""The secret rules: gitleaks' maintained rule file plus diagbot's own (both TOML in this folder), compiled once.

A rule is gitleaks' model: a regex (its secret is one capture group), keywords that must occur for the rule to run,
an entropy floor and allowlists. Rules that only look at file paths, or whose regex cannot be rewritten for Python,
are skipped and listed in `SecretRuleSet.skipped`. The set is immutable; `core.evidence.redaction.Redactor` applies it.
A rule's regex is compiled when a text first contains its keyword (most rules never run in a given process, and
compiling all ~230 at import would add ~0.2 s to every start); tests compile every one.
"""

from __future__ import annotations

import re
import tomllib
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from types import MappingProxyType
from typing import Any

from core.evidence.secrets.goregex import translate

_GITLEAKS_TERMINATOR = r"""(?:[\x60'"\s;]|\\[nr]|$)"""
# Most gitleaks rules open with a lazy run of name characters before their keyword: it only widens the match to the
# whole name, costs a 50-step retry at every position of the text, and is dropped here (`SecretRule.lead`).
_LAZY_NAME = r"(?i)[\w.-]{0,50}?"
_LAZY_NAME_CHARS = 50


@dataclass(frozen=True)
class Allowlist:
    """Findings this allowlist lets through: a regex over the secret (or the whole match/line), or a stopword in it."""

    target: str
    patterns: tuple[str, ...]
    stopwords: tuple[str, ...]
    require_all: bool

    @cached_property
    def regexes(self) -> tuple[re.Pattern[str], ...]:
        """The compiled patterns (on first use)."""
        return tuple(_compile(p) for p in self.patterns)

    def allows(self, secret: str, match: str, line: str) -> bool:
        """True when the finding is not a secret by this allowlist."""
        checks: list[bool] = []
        if self.patterns:
            subject = {"match": match, "line": line}.get(self.target, secret)
            checks.append(any(regex.search(subject) is not None for regex in self.regexes))
        if self.stopwords:
            lowered = secret.lower()
            checks.append(any(word in lowered for word in self.stopwords))
        return all(checks) if self.require_all else any(checks)


@dataclass(frozen=True)
class SecretRule:
    """One detection rule."""

    id: str
    pattern: str
    """The Python regex (already rewritten from RE2 for gitleaks' rules)."""
    secret_group: int
    entropy: float
    keywords: tuple[str, ...]
    lead: int
    """How many name characters before the match belong to it (for allowlists over the whole match)."""
    allowlists: tuple[Allowlist, ...]
    """This rule's allowlists, and for gitleaks' rules its global ones (placeholder values of source code)."""

    @cached_property
    def regex(self) -> re.Pattern[str]:
        """The compiled regex (on first use)."""
        return _compile(self.pattern)


@dataclass(frozen=True)
class SecretRuleSet:
    """Every rule, the keyword prefilter and the global allowlists."""

    rules: tuple[SecretRule, ...]
    always: tuple[int, ...]
    """Indexes of rules without keywords (they run on every text)."""
    keyword_rules: Mapping[str, tuple[int, ...]]
    """Keyword (lower case) -> indexes of the rules it triggers, including those of every keyword it starts with."""
    keyword_pattern: re.Pattern[str] | None
    """Finds, at each position of a lower-cased text, the longest keyword starting there."""
    skipped: tuple[str, ...]
    """Ids of rules not loaded (path-only, disabled, or a regex Python cannot run), with the reason."""

    def rules_for(self, lowered: str) -> list[SecretRule]:
        """The rules whose keywords occur in the lower-cased text (plus those that always run), in file order."""
        indexes = set(self.always)
        if self.keyword_pattern is not None:
            for found in self.keyword_pattern.findall(lowered):
                indexes.update(self.keyword_rules[found])
        return [self.rules[i] for i in sorted(indexes)]


def _compile(pattern: str) -> re.Pattern[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a FutureWarning ("possible nested set") means the rewrite missed something
        return re.compile(pattern)


def _allowlist(raw: Mapping[str, Any], go: bool) -> Allowlist | None:
    regexes = [str(r) for r in raw.get("regexes", [])]
    stopwords = tuple(str(w).lower() for w in raw.get("stopwords", []))
    require_all = str(raw.get("condition", "OR")).upper() == "AND"
    if (raw.get("paths") or raw.get("commits")) and require_all:
        return None  # needs a path or commit to match: never true for tool output
    if not regexes and not stopwords:
        return None
    patterns = tuple(translate(r) if go else r for r in regexes)
    return Allowlist(str(raw.get("regexTarget", "secret")), patterns, stopwords, require_all)


def _rule(raw: Mapping[str, Any], go: bool, token_end: str | None, shared: Sequence[Allowlist]) -> SecretRule:
    pattern = str(raw["regex"])
    if go and token_end is not None:
        pattern = pattern.replace(_GITLEAKS_TERMINATOR, token_end)
    allowlists = [*shared, *(_allowlist(a, go) for a in raw.get("allowlists", []))]
    translated = translate(pattern) if go else pattern
    lead = 0
    if translated.startswith(_LAZY_NAME):
        translated, lead = "(?i)" + translated[len(_LAZY_NAME) :], _LAZY_NAME_CHARS
    return SecretRule(
        id=str(raw["id"]),
        pattern=translated,
        lead=lead,
        secret_group=int(raw.get("secretGroup", 0)),
        entropy=float(raw.get("entropy", 0.0)),
        keywords=tuple(str(k).lower() for k in raw.get("keywords", [])),
        allowlists=tuple(a for a in allowlists if a is not None),
    )


def _trie(words: Sequence[str]) -> str:
    """A regex matching any of the words, factored as a trie: most positions are rejected after one comparison, and
    optional endings are greedy, so at each position the longest word that starts there is matched."""
    root: dict[str, Any] = {}
    for word in words:
        node = root
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def emit(node: dict[str, Any]) -> str:
        branches = [re.escape(char) + emit(child) for char, child in sorted(node.items()) if char]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"
        return f"(?:{body})?" if "" in node else body

    return emit(root)


def _keyword_index(rules: Sequence[SecretRule]) -> tuple[dict[str, tuple[int, ...]], re.Pattern[str] | None]:
    direct: dict[str, set[int]] = {}
    for index, rule in enumerate(rules):
        for word in rule.keywords:
            direct.setdefault(word, set()).add(index)
    # The pattern reports the longest keyword at each position; a shorter keyword there is a prefix of it.
    index_map = {word: tuple(sorted(set().union(*(ids for k, ids in direct.items() if word.startswith(k)))))
                 for word in direct}
    if not direct:
        return index_map, None
    return index_map, re.compile(f"(?=({_trie(sorted(direct))}))")


def _load(name: str) -> dict[str, Any]:
    return tomllib.loads(resources.files("core.evidence.secrets").joinpath(name).read_text(encoding="utf-8"))


def load_ruleset(gitleaks_file: str = "gitleaks.toml", own_file: str = "diagbot.toml") -> SecretRuleSet:
    """Compile gitleaks' rules (minus the disabled ones) and diagbot's own rules into one set."""
    gitleaks, own = _load(gitleaks_file), _load(own_file)
    settings = own.get("gitleaks", {})
    disabled = set(settings.get("disabled", []))
    token_end = settings.get("token_end")
    rules: list[SecretRule] = []
    skipped: list[str] = []
    gitleaks_global = [a for a in [_allowlist(gitleaks.get("allowlist", {}), go=True)] if a is not None]
    for raw, go in [(r, False) for r in own.get("rules", [])] + [(r, True) for r in gitleaks.get("rules", [])]:
        rule_id = str(raw.get("id", "?"))
        if rule_id in disabled:
            skipped.append(f"{rule_id}: disabled in {own_file}")
        elif "regex" not in raw:
            skipped.append(f"{rule_id}: matches file paths only")
        elif "path" in raw:
            skipped.append(f"{rule_id}: only for files named {raw['path']}")
        else:
            try:
                rules.append(_rule(raw, go, token_end, gitleaks_global if go else []))
            except ValueError as exc:
                skipped.append(f"{rule_id}: regex not usable in Python ({exc})")
    keyword_rules, keyword_pattern = _keyword_index(rules)
    return SecretRuleSet(
        rules=tuple(rules),
        always=tuple(i for i, rule in enumerate(rules) if not rule.keywords),
        keyword_rules=MappingProxyType(keyword_rules),
        keyword_pattern=keyword_pattern,
        skipped=tuple(skipped),
    )
