"""Fuzzing the redaction (hypothesis): it never crashes, is idempotent, and never returns a secret hidden in noise."""

from __future__ import annotations

import os
import string

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from core.evidence.redaction import DEFAULT_RULES, Redactor, redact
from core.evidence.secrets.ruleset import SecretRule

# REDACTION_FUZZ_EXAMPLES=2000 for a long campaign; CI runs the default.
_FAST = settings(max_examples=int(os.environ.get("REDACTION_FUZZ_EXAMPLES", "60")), deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

# Text made of what log lines and runbooks are made of, including the characters our rules and markers use.
_ALPHABET = string.ascii_letters + string.digits + " \n\t=:;,./@-_'\"{}[]()<>|&*$#!?+~`%^\\" + "…⟦⟧é"
noise = st.text(alphabet=_ALPHABET, max_size=120)
separator = st.sampled_from([" ", "\n", " | ", ", ", "; ", " (", ") ", "\t"])

_B62 = string.ascii_letters + string.digits


def _mixed(tail: str) -> bool:
    return any(c.isupper() for c in tail) and any(c.islower() for c in tail) and any(c.isdigit() for c in tail)


def _token(prefix: str, size: int, alphabet: str = _B62) -> st.SearchStrategy[str]:
    """A real token's random tail (issued tokens are random: a run of zeros after sk_live_ is a placeholder)."""
    tails = st.text(alphabet=alphabet, min_size=size, max_size=size).filter(lambda t: len(set(t)) >= min(10, size // 2))
    return tails.map(lambda tail: prefix + tail)


# (secret, the part that must never be shown): realistic kinds, each in its usual surroundings.
secrets = st.one_of(
    _token("sk_live_", 28).map(lambda s: (s, s[8:])),
    _token("rk_live_", 28).map(lambda s: (s, s[8:])),
    _token("whsec_", 32).map(lambda s: (s, s[6:])),
    _token("AIza", 35, _B62 + "-_").map(lambda s: (s, s[4:])),
    _token("ghp_", 36).map(lambda s: (s, s[4:])),
    _token("xoxb-1234567890-", 24).map(lambda s: (s, s[16:])),
    _token("AKIA", 16, string.ascii_uppercase + string.digits).map(lambda s: (s, s[4:])),
    # With a digit: a bare word such as "undefined" or "null" after password= is a placeholder, shown on purpose.
    st.text(alphabet=_B62 + "!#%", min_size=8, max_size=20).filter(lambda p: any(c.isdigit() for c in p))
    .map(lambda p: (f"db_password={p}", p)),
    st.text(alphabet=_B62 + "@/!", min_size=8, max_size=20).filter(lambda p: "@" in p or "/" in p)
    .map(lambda p: (f"postgres://app:{p}@db.internal:5432/shop", p)),
    # an anonymous token is random (issued tokens are): drawn uniformly, not built by hypothesis character by character,
    # whose shrinking makes structured strings (0011223456AabBaAacd...) that no issuer produces
    st.randoms(use_true_random=False).map(lambda r: "".join(r.choice(_B62) for _ in range(40))).filter(_mixed)
    .map(lambda s: (s, s)),
)


@_FAST
@given(st.text(max_size=400))
def test_any_text_redacts_without_error_and_idempotently(text: str) -> None:
    """Arbitrary unicode: no exception, and redacting the result again changes nothing."""
    once = redact(text)
    assert redact(once) == once


@_FAST
@given(st.lists(st.one_of(noise, separator), max_size=12).map("".join))
def test_log_like_text_is_idempotent(text: str) -> None:
    """Text built of the characters the rules and markers use is stable under a second pass."""
    once = redact(text)
    assert redact(once) == once


@_FAST
@given(noise, separator, secrets, separator, noise)
def test_a_secret_embedded_in_random_text_never_comes_back(before: str, left: str, secret: tuple[str, str], right: str,
                                                           after: str) -> None:
    """Whatever surrounds it, the secret part of a planted secret is not in the output, and the output is stable."""
    value, hidden = secret
    assume(hidden not in before + after)  # the noise itself may spell it: that copy is not the secret
    out = redact(before + left + value + right + after)
    assert hidden not in out
    assert redact(out) == out


@_FAST
@given(st.lists(st.text(max_size=60), max_size=30))
def test_memo_gives_what_the_plain_function_gives(texts: list[str]) -> None:
    """A Redactor's memo (bounded, per instance) never changes an answer, even when it is cleared mid-way."""
    redactor = Redactor(memo_entries=4)
    for text in texts + texts:
        assert redactor.redact(text) == redact(text)


_RULE_ALPHABET = st.sampled_from([*"aAzZ09+/=_-.: \n\t", "MII", "token", "pass", "key", "xoxb-", "ghp_", "é"])


def _every_candidate(lowered: bytes) -> list[SecretRule]:
    """The rules the keyword prefilter selects, plus every keyword-free rule (what rules_for picked before it left
    out the rules a short text cannot hold)."""
    indexes = set(DEFAULT_RULES.always)
    for found in DEFAULT_RULES._prefilter.Match(lowered) or ():
        indexes.update(DEFAULT_RULES.keyword_rules[DEFAULT_RULES.keywords[found]])
    return [DEFAULT_RULES.rules[i] for i in sorted(indexes)]


@_FAST
@given(st.lists(_RULE_ALPHABET, max_size=40).map("".join))
def test_rule_selection_leaves_out_only_rules_that_cannot_match(text: str) -> None:
    """rules_for may skip a candidate rule only when the rule finds nothing in the text (a text too short for it)."""
    data = text.encode()
    chosen = DEFAULT_RULES.rules_for(data.lower())
    skipped = [rule for rule in _every_candidate(data.lower()) if rule not in chosen]
    assert all(rule.find(data, 0)[0][0] < 0 for rule in skipped), [r.id for r in skipped]
    assert set(chosen) <= set(_every_candidate(data.lower()))


def _reference_value(obj: object) -> object:
    """redact_value by its definition, without the per-shape memo: strings redacted, values under a secret-named key
    (or under the value field of a record whose name field names a secret) hidden unless empty."""
    from core.evidence.redaction import REDACTED, is_secret_key, paired_secret_keys

    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        paired = paired_secret_keys(obj)
        return {k: REDACTED if isinstance(k, str) and (k in paired or is_secret_key(k)) and v not in (None, "", [], {})
                else _reference_value(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_reference_value(v) for v in obj]
    return obj


_KEYS = st.sampled_from(["name", "Key", "value", "VAL", "data", "password", "api_key", "max_tokens", "service",
                         "message", "fields", "setting", "secret", "text", "x"])
_NAMES = st.sampled_from(["smtp_password", "db pass", "timeout", "api key", "region", "x" * 201, ""])
_LEAF = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False), _NAMES, noise,
                  secrets.map(lambda pair: pair[0]), st.just([]), st.just({}))
_JSON = st.recursive(_LEAF, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                    st.dictionaries(_KEYS, inner, max_size=5)), max_leaves=25)


@_FAST
@given(st.lists(_JSON, min_size=1, max_size=4))
def test_redact_value_is_its_definition_across_repeated_shapes(values: list[object]) -> None:
    """One Redactor redacting several values (its per-shape memo reused across mappings with the same keys and other
    values) gives what the definition gives for each."""
    redactor = Redactor()
    for value in [*values, *values]:
        assert redactor.redact_value(value) == _reference_value(value)
