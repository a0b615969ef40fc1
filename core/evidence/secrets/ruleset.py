"""The secret rules: gitleaks' maintained rule file plus diagbot's own (both TOML in this folder), compiled once.

A rule is gitleaks' model: a regex (its secret is one capture group), keywords that must occur for the rule to run,
an entropy floor and allowlists. Every regex runs on RE2 (google-re2), the engine gitleaks' rules are written for:
its matching time is linear in the text whatever the pattern and the input, so no hostile tool output can make
redaction quadratic (Python's backtracking `re` took 1.2 s on 40 KB of `://a:`), and gitleaks' RE2 syntax needs no
rewriting. The keyword prefilter is one RE2 set of every keyword (one pass over the text, however many keywords).
Rules that only look at file paths are skipped and listed in `SecretRuleSet.skipped`.
A rule's regex is compiled when a text first contains its keyword (most rules never run in a given process); a test
compiles every one, so a shipped rule RE2 refuses cannot reach production.
"""

from __future__ import annotations

import bisect
import math
import re._parser as sre_parse
import tomllib
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from importlib import resources
from types import MappingProxyType
from typing import Any, Protocol, cast

import re2

_GITLEAKS_TERMINATOR = r"""(?:[\x60'"\s;]|\\[nr]|$)"""
# Most gitleaks rules open with a lazy run of name characters before their keyword: it only widens the match to the
# whole name, and is dropped here (`SecretRule.lead` says how far back a match may be widened for allowlists).
_LAZY_NAME = r"(?i)[\w.-]{0,50}?"
_LAZY_NAME_CHARS = 50
_MAX_MEM = 32 << 20
"""RE2 memory per regex (DFA cache): beyond it RE2 falls back to its NFA, still linear, never wrong."""
_ENTROPY_MARGIN = 1.2
"""Bits below log2(length) where a length-scaled entropy floor sits (SecretRule.entropy_floor)."""


class Regex(Protocol):
    """A compiled RE2 pattern (bytes or str subjects)."""

    pattern: str
    groups: int

    def search(self, text: bytes | str, pos: int = ..., endpos: int = ...) -> object | None: ...


Spans = list[tuple[int, int]]
"""One match: (start, end) of the whole match, then of each group ((-1, -1) when the group did not take part)."""
_UNANCHORED = re2._Anchor.UNANCHORED


Matcher = Callable[[bytes, int], Spans]
"""RE2's matcher over bytes from a position: the spans of the leftmost match, [(-1, -1), ...] when there is none."""


def matcher(regex: Regex) -> Matcher:
    """The regex's RE2 matcher, called directly (google-re2's `_regexp.Match`, what its own `finditer` calls): the
    module's `finditer` builds a match object per hit and costs 3x as much on secret-dense text."""
    native = regex._regexp  # type: ignore[attr-defined]
    match = native.Match

    def find(data: bytes, pos: int) -> Spans:
        spans: Spans = match(_UNANCHORED, data, pos, len(data))
        return spans

    return find


def search_bytes(regex: Regex, data: bytes) -> bool:
    """True when the regex matches anywhere in the bytes."""
    return bool(matcher(regex)(data, 0)[0][0] >= 0)


def compile_re2(pattern: str) -> Regex:
    """An RE2 regex (ValueError when RE2 cannot compile it); errors are raised, not logged by RE2 itself."""
    options = re2.Options()
    options.max_mem = _MAX_MEM
    options.log_errors = False
    try:
        return cast(Regex, re2.compile(pattern, options))
    except re2.error as exc:
        raise ValueError(str(exc)) from exc


@dataclass(frozen=True)
class Allowlist:
    """Findings this allowlist lets through: a regex over the secret (or the whole match/line), or a stopword in it."""

    target: str
    patterns: tuple[str, ...]
    stopwords: tuple[str, ...]
    require_all: bool

    @cached_property
    def stopword_matcher(self) -> Matcher:
        """One RE2 alternation of every stopword (generic-api-key has ~1,500: one pass, not one search per word)."""
        return matcher(compile_re2("|".join(re2.escape(w) for w in self.stopwords)))

    @cached_property
    def matchers(self) -> tuple[Matcher, ...]:
        """The compiled patterns' direct matchers (on first use)."""
        return tuple(matcher(compile_re2(p)) for p in self.patterns)

    def allows(self, secret: bytes, match: Callable[[], bytes], line: Callable[[], bytes]) -> bool:
        """True when the finding is not a secret by this allowlist. `match` and `line` give the whole match and its
        line (computed only when a pattern looks at them); all three are UTF-8."""
        checks: list[bool] = []
        if self.patterns:
            subject = match() if self.target == "match" else line() if self.target == "line" else secret
            checks.append(any(find(subject, 0)[0][0] >= 0 for find in self.matchers))
        if self.stopwords:
            checks.append(self.stopword_matcher(secret.lower(), 0)[0][0] >= 0)
        return all(checks) if self.require_all else any(checks)


@dataclass(frozen=True)
class SecretRule:
    """One detection rule."""

    id: str
    pattern: str
    """The RE2 regex."""
    secret_group: int
    entropy: float
    keywords: tuple[str, ...]
    lead: int
    """How many name characters before the match belong to it (for allowlists over the whole match)."""
    allowlists: tuple[Allowlist, ...]
    """This rule's allowlists, and for gitleaks' rules its global ones (placeholder values of source code)."""
    words_only: bool = False
    """The allowlist of separated identifiers (core/evidence/identifiers.py) applies to this rule's findings."""
    min_bytes: int = 0
    """No text shorter than this (in UTF-8 bytes) can hold a match (0: not known)."""
    entropy_by_length: bool = False
    """The entropy floor falls for short findings (see `entropy_floor`): a short random token cannot reach it."""

    def entropy_floor(self, chars: int) -> float:
        """The entropy at or below which a finding of `chars` characters is dropped. A uniformly random base62 token
        of n characters has about log2(n) - 0.45 bits (sd 0.13 at 32-40): with `entropy_by_length` the floor is
        log2(n) - 1.2, at most `entropy`, so about 1 in 100,000 random 32-character tokens falls under it instead of
        1 in 120 under a flat 4.2 (bench/bench_entropy_floor.py)."""
        if not self.entropy_by_length or chars < 2:
            return self.entropy
        return min(self.entropy, math.log2(chars) - _ENTROPY_MARGIN)

    @cached_property
    def regex(self) -> Regex:
        """The compiled regex (on first use)."""
        return compile_re2(self.pattern)

    @cached_property
    def allowlists_see_context(self) -> bool:
        """True when an allowlist looks at the whole match or line, not only at the secret."""
        return any(a.target in ("match", "line") and a.patterns for a in self.allowlists)

    @cached_property
    def find(self) -> Matcher:
        """The regex's direct RE2 matcher (on first use)."""
        return matcher(self.regex)


@dataclass(frozen=True)
class SecretRuleSet:
    """Every rule, the keyword prefilter and the global allowlists."""

    rules: tuple[SecretRule, ...]
    always: tuple[int, ...]
    """Indexes of rules without keywords (they run on every text)."""
    keywords: tuple[str, ...]
    """Every keyword (lower case), in the order of the prefilter set."""
    keyword_rules: Mapping[str, tuple[int, ...]]
    """Keyword (lower case) -> indexes of the rules it triggers."""
    skipped: tuple[str, ...]
    """Ids of rules not loaded (path-only or disabled), with the reason."""
    _selected: dict[tuple[int, tuple[int, ...]], list[SecretRule]] = field(default_factory=dict, compare=False,
                                                                          repr=False)

    @cached_property
    def _always_bounds(self) -> tuple[int, ...]:
        """The keyword-free rules' shortest matches, sorted: how many of them a text reaches says which of those
        rules can match it (part of the selection's memo key)."""
        return tuple(sorted({self.rules[i].min_bytes for i in self.always}))

    @cached_property
    def _always_min_bytes(self) -> int:
        return self._always_bounds[0] if self._always_bounds else 0

    @cached_property
    def _prefilter(self) -> Any:
        keywords = re2.Set.SearchSet(_set_options())
        for word in self.keywords:
            keywords.Add(re2.escape(word))
        keywords.Compile()
        return keywords

    def rules_for(self, lowered: str | bytes) -> list[SecretRule]:
        """The rules whose keywords occur in the lower-cased text (plus those that always run), in file order."""
        data = lowered.encode("utf-8", "surrogatepass") if isinstance(lowered, str) else lowered
        found = self._prefilter.Match(data)
        size = len(data)
        if not found and size < self._always_min_bytes:
            return []  # no keyword, and too short for any rule that runs without one (most short texts)
        key = (bisect.bisect_right(self._always_bounds, size), tuple(found) if found else ())
        selected = self._selected.get(key)
        if selected is None:
            indexes = {i for i in self.always if size >= self.rules[i].min_bytes}
            for word in key[1]:
                indexes.update(self.keyword_rules[self.keywords[word]])
            selected = [self.rules[i] for i in sorted(indexes)]
            if len(self._selected) >= _SELECTED_ENTRIES:
                self._selected.clear()  # atomic: projection threads and the loop share the rule set
            self._selected[key] = selected
        return list(selected)


_SELECTED_ENTRIES = 1024


def min_match_bytes(pattern: str) -> int:
    """A lower bound of the UTF-8 length of any match of the pattern: the shortest match in characters by Python's
    own regex parser (a character is at least a byte), or 0 when that parser reads the pattern differently from RE2
    or not at all (it refuses or warns about syntax RE2 has and it lacks: POSIX classes, \\pN, \\z...)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            low, _ = sre_parse.parse(pattern).getwidth()
    except Exception:  # any refusal means "not known"
        return 0
    return max(0, int(low))


def _set_options() -> Any:
    options = re2.Options()
    options.max_mem = _MAX_MEM
    options.log_errors = False
    return options


def _allowlist(raw: Mapping[str, Any]) -> Allowlist | None:
    regexes = [str(r) for r in raw.get("regexes", [])]
    stopwords = tuple(str(w).lower() for w in raw.get("stopwords", []))
    require_all = str(raw.get("condition", "OR")).upper() == "AND"
    if (raw.get("paths") or raw.get("commits")) and require_all:
        return None  # needs a path or commit to match: never true for tool output
    if not regexes and not stopwords:
        return None
    return Allowlist(str(raw.get("regexTarget", "secret")), tuple(regexes), stopwords, require_all)


def _rule(raw: Mapping[str, Any], gitleaks: bool, token_end: str | None, shared: Sequence[Allowlist],
          identifier_rules: frozenset[str] = frozenset()) -> SecretRule:
    pattern = str(raw["regex"])
    if gitleaks and token_end is not None:
        pattern = pattern.replace(_GITLEAKS_TERMINATOR, token_end)
    allowlists = [*shared, *(_allowlist(a) for a in raw.get("allowlists", []))]
    lead = int(raw.get("lead", 0))
    if pattern.startswith(_LAZY_NAME):
        pattern, lead = "(?i)" + pattern[len(_LAZY_NAME) :], _LAZY_NAME_CHARS
    return SecretRule(
        id=str(raw["id"]),
        pattern=pattern,
        lead=lead,
        secret_group=int(raw.get("secretGroup", 0)),
        entropy=float(raw.get("entropy", 0.0)),
        keywords=tuple(str(k).lower() for k in raw.get("keywords", [])),
        allowlists=tuple(a for a in allowlists if a is not None),
        words_only=bool(raw.get("identifiers", False)) or str(raw["id"]) in identifier_rules,
        min_bytes=0 if raw.get("keywords") else min_match_bytes(pattern),
        entropy_by_length=bool(raw.get("entropy_by_length", False)),
    )


def _load(name: str) -> dict[str, Any]:
    return tomllib.loads(resources.files("core.evidence.secrets").joinpath(name).read_text(encoding="utf-8"))


def load_ruleset(gitleaks_file: str = "gitleaks.toml", own_file: str = "diagbot.toml") -> SecretRuleSet:
    """Compile gitleaks' rules (minus the disabled ones) and diagbot's own rules into one set."""
    gitleaks, own = _load(gitleaks_file), _load(own_file)
    settings = own.get("gitleaks", {})
    disabled = set(settings.get("disabled", []))
    token_end = settings.get("token_end")
    identifier_rules = frozenset(settings.get("identifier_allowlist", []))
    rules: list[SecretRule] = []
    skipped: list[str] = []
    gitleaks_global = [a for a in [_allowlist(gitleaks.get("allowlist", {}))] if a is not None]
    for raw, is_gitleaks in [(r, False) for r in own.get("rules", [])] + [(r, True) for r in gitleaks.get("rules", [])]:
        rule_id = str(raw.get("id", "?"))
        if rule_id in disabled:
            skipped.append(f"{rule_id}: disabled in {own_file}")
        elif "regex" not in raw:
            skipped.append(f"{rule_id}: matches file paths only")
        elif "path" in raw:
            skipped.append(f"{rule_id}: only for files named {raw['path']}")
        else:
            rules.append(_rule(raw, is_gitleaks, token_end, gitleaks_global if is_gitleaks else [], identifier_rules))
    direct: dict[str, set[int]] = {}
    for index, rule in enumerate(rules):
        for word in rule.keywords:
            direct.setdefault(word, set()).add(index)
    return SecretRuleSet(
        rules=tuple(rules),
        always=tuple(i for i, rule in enumerate(rules) if not rule.keywords),
        keywords=tuple(sorted(direct)),
        keyword_rules=MappingProxyType({word: tuple(sorted(ids)) for word, ids in direct.items()}),
        skipped=tuple(skipped),
    )
