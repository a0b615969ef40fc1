"""The secret rule set: gitleaks' maintained rules load into Python, diagbot's own rules close the gaps they leave."""

from __future__ import annotations

import math
import random
import string

import pytest

from core.evidence.redaction import DEFAULT_RULES, KEPT, REDACTED, find_secrets, redact
from core.evidence.secrets.ruleset import compile_re2, load_ruleset


def test_gitleaks_rules_load_and_only_path_rules_are_skipped() -> None:
    """All of gitleaks' content rules compile under RE2 as gitleaks writes them; only path-only or file-type rules
    (and the one we replace) are skipped, each with its reason."""
    ids = {rule.id for rule in DEFAULT_RULES.rules}
    assert len(ids) >= 220
    assert {"stripe-access-token", "gcp-api-key", "github-fine-grained-pat", "slack-webhook-url", "sendgrid-api-token",
            "generic-api-key", "jwt"} <= ids
    for rule in load_ruleset().rules:  # compiled lazily in production: every one must compile, allowlists too
        assert rule.regex.pattern == rule.pattern
        for allowlist in rule.allowlists:
            assert len(allowlist.matchers) == len(allowlist.patterns)
    assert any(reason.startswith("private-key: disabled") for reason in DEFAULT_RULES.skipped)
    assert all("only for files" in r or "file paths" in r or "disabled" in r for r in DEFAULT_RULES.skipped)


def test_a_regex_re2_refuses_is_an_error_not_a_backtracking_fallback() -> None:
    """Look-arounds and backreferences are not RE2: such a pattern is refused (no rule silently loses linearity)."""
    with pytest.raises(ValueError, match="invalid perl operator"):
        compile_re2(r"(?<=a)b")
    with pytest.raises(ValueError, match="invalid escape"):
        compile_re2(r"(a)\1")


MISSED_BEFORE = [
    ("stripe secret key", "charge failed key=sk_live_51H8xYzAbCdEfGhIjKlMnOpQrSt, retrying", "51H8xYzAbCdEfGhIjKlMnOpQrSt",
     "sk_live_…[redacted]"),
    ("stripe restricted key", "restricted rk_live_51H8xYzAbCdEfGhIjKlMnOpQrStU used", "51H8xYzAbCdEfGhIjKlMnOpQrStU",
     "rk_live_…[redacted]"),
    ("stripe webhook secret", "STRIPE_WEBHOOK whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw ok", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
     "whsec_…[redacted]"),
    ("google api key", "maps key AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", "SyD-9tSrke72PouQMnMX", "AIza…[redacted]"),
    ("github fine-grained pat",
     "token github_pat_11AJKQ3ZA0pT2hE9LW5bGc_q8Vh1mKcZx7Tn4RrY2sPdEw9fUj6LoBa3HiGv5NtQ8XyZ1cK4mE7pR2uW end",
     "11AJKQ3ZA0pT2hE9LW5bGc", "github_pat_…[redacted]"),
    ("slack webhook url", "alert to https://hooks.slack.com/services/T01ABCDEF/B02GHIJKL/Xy7pQ2rS9tU4vW1zA8bC3dE6 done",
     "Xy7pQ2rS9tU4vW1zA8bC3dE6", "https://hooks.slack.com/…[redacted]"),
    ("pgp private key block",
     "key:\n-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF0abcdefgh12345\n=abcd\n-----END PGP PRIVATE KEY BLOCK-----",
     "lQOYBF0abcdefgh12345", "-----BEGIN PGP PRIVATE KEY BLOCK-----[redacted]"),
    ("dsn password with @ and /", "DATABASE_URL=postgres://app:p@ss/w0rd@db.internal:5432/shop", "p@ss/w0rd",
     "postgres://app:[redacted]@db.internal:5432/shop"),
    ("smtp pass", "SMTP_PASS=Gr33nApple! sent", "Gr33nApple", "SMTP_PASS=[redacted] sent"),
    ("identified by", "CREATE USER 'report'@'%' IDENTIFIED BY 'R3port!ng2024';", "R3port!ng2024",
     "IDENTIFIED BY '[redacted]'"),
    ("mysql -p", "ran mysql -h db -u root -pS3cr3tR00t shop", "S3cr3tR00t", "-p[redacted] shop"),
    ("json auth field", '{"user":"svc","auth":"c3ZjOmh1bnRlcjI="}', "c3ZjOmh1bnRlcjI", '"auth":"[redacted]"'),
    ("sendgrid key", "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", "ngeVfQFYQlKU0ufo8x5d1A",
     "SG.…[redacted]"),
    ("password in prose", "the password is Tr0ub4dor&3 for the admin", "Tr0ub4dor", "the password is [redacted] for"),
    ("bcrypt hash", "hash $2b$12$KIXQJQ0n3Kx1v4Xz2Bd9EeO9rV9Yh6o5mKp2q3r4s5t6u7v8w9x0y stored",
     "KIXQJQ0n3Kx1v4Xz2Bd9EeO9rV9Yh6o5mKp2q3r4s5t6u7v8w9x0y", "hash [redacted] stored"),
    ("scram hash", "rolpassword SCRAM-SHA-256$4096:c2FsdHNhbHQ=$c3RvcmVka2V5c3RvcmVk:c2VydmVya2V5c2VydmVy",
     "c3RvcmVka2V5c3RvcmVk", "rolpassword [redacted]"),
    ("mysql native hash", "root | *6BB4837EB74329105EE4568DDA7DC67ED2CA2AD9 |", "6BB4837EB74329105EE4568DDA7DC67ED2CA2AD9",
     "root | [redacted] |"),
    ("anonymous high-entropy token", "x=1 wJalrXUtnFEMIK7MDENGbPxRfiCYzEXAMPLEKEY9 y=2", "wJalrXUtnFEMIK7MDENGbPxRfiCY",
     "x=1 [redacted] y=2"),
]


@pytest.mark.parametrize(("kind", "text", "secret", "shown"), MISSED_BEFORE, ids=[m[0] for m in MISSED_BEFORE])
def test_secret_kinds_the_old_regexes_missed_are_caught(kind: str, text: str, secret: str, shown: str) -> None:
    """Each kind the planted-secrets corpus slipped past the hand-written regexes is now redacted, keeping only a
    type prefix (sk_live_…[redacted]) or the surrounding key."""
    out = redact(text)
    assert secret not in out
    assert shown in out
    assert redact(out) == out


def test_kept_prefix_never_reveals_secret_characters() -> None:
    """Only the fixed type prefix stays; the characters after it are gone, however short the tail."""
    out = redact("token sk_live_abcdefghij0123456789 end")
    assert out == f"token sk_live_{KEPT} end"
    assert redact("password=sk_live_abcdefghij0123456789") == f"password=sk_live_{KEPT}"


def test_findings_name_their_rule() -> None:
    """Every finding says which rule found it (for tests and for tuning the rule files)."""
    ids = {f.rule_id for f in find_secrets("SMTP_PASS=Gr33nApple! and AKIAIOSFODNN7EXAMPLF", DEFAULT_RULES)}
    assert {"secret-named-value", "aws-access-key-id"} <= ids


@pytest.mark.parametrize(
    "text",
    [
        "GET /api/orders/42 200 12ms user_id=981 trace_id=4bf92f3577b34da6a3ce929d0e0e4736",
        "api-gateway upstream timeout after 30s calling payment-service",
        "deploy sha 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 rolled out",
        "pod order-service-7d9f8b6c5d-x2k4p restarted (OOMKilled)",
        "request 550e8400-e29b-41d4-a716-446655440000 failed: token expired",
        "password reset requested for user 42",
        "OrderServiceConnectionPoolTimeoutException at com.shop.orders.Repository.save",
        "the password is wrong",
        "bypass=true compass=north",
    ],
)
def test_ordinary_operations_text_is_untouched(text: str) -> None:
    """Hex ids, UUIDs, pod names, class names and plain words are not secrets."""
    assert redact(text) == text


def test_marker_is_lower_case_and_stable() -> None:
    """The marker is one constant that downstream code and tests can rely on."""
    assert REDACTED == "[redacted]"
    assert KEPT == "…[redacted]"


def test_a_rules_file_can_be_loaded_again() -> None:
    """Loading is a pure function of the files (a fresh set equals the shipped one in content)."""
    fresh = load_ruleset()
    assert [r.id for r in fresh.rules] == [r.id for r in DEFAULT_RULES.rules]


def test_keyword_free_rules_know_their_shortest_match() -> None:
    """The rules that run on every text say how short a text they can match: rules_for leaves them out of shorter
    texts (most timeline and subject strings). A pattern Python's parser reads differently from RE2 gets no bound."""
    from core.evidence.redaction import DEFAULT_RULES
    from core.evidence.secrets.ruleset import min_match_bytes

    bounds = {DEFAULT_RULES.rules[i].id: DEFAULT_RULES.rules[i].min_bytes for i in DEFAULT_RULES.always}
    assert bounds == {"pem-body-line": 43, "high-entropy-token": 32}
    assert min_match_bytes(r"[[:alpha:]]{40}") == 0  # a POSIX class: Python warns, so no bound
    assert min_match_bytes(r"\pL{40}") == 0
    assert min_match_bytes(r"a{3}b?") == 3
    assert DEFAULT_RULES.rules_for(b"a" * 31) == []
    assert "pem-body-line" not in [r.id for r in DEFAULT_RULES.rules_for(b"a" * 32)]
    assert "high-entropy-token" in [r.id for r in DEFAULT_RULES.rules_for(b"a" * 32)]


def test_the_remembered_selection_depends_on_which_keyword_free_rules_a_text_reaches() -> None:
    """A selection remembered for a text too short for pem-body-line (43 bytes) must not leave that rule out of a
    longer text with the same keywords: a PEM body line right after a 35-byte line is still found."""
    from core.evidence.redaction import DEFAULT_RULES, redact

    for size in (35, 42):
        assert "pem-body-line" not in [r.id for r in DEFAULT_RULES.rules_for(b"b" * size)]
        assert "pem-body-line" in [r.id for r in DEFAULT_RULES.rules_for(b"b" * (size + 60))]
    body = "MIIEowIBAAKCAQEAq83lkrZ9xYw3Tn5Pq7vLm2Hs8Jd4Kf6Rt1Uy0Wz"
    assert redact("c" * 35) == "c" * 35
    assert body not in redact(f"key line follows\n{body}\n")


def test_random_short_tokens_are_redacted_whatever_their_sampled_entropy() -> None:
    """A flat 4.2-bit floor let about 1 in 120 uniformly random 32-character base62 keys through (their sampled entropy
    is 4.55 +- 0.135 bits): 3,000 seeded ones, anonymous in a log line, are all redacted with the length-scaled floor."""
    alphabet = string.ascii_letters + string.digits
    draw = random.Random(20261204)
    shown = []
    for _ in range(3000):
        token = "".join(draw.choice(alphabet) for _ in range(32))
        mixed = any(c.isupper() for c in token) and any(c.islower() for c in token) and any(c.isdigit() for c in token)
        if mixed and token in redact(f"2026-12-04T20:31:07Z ERROR order-service upstream said {token} twice"):
            shown.append(token)
    assert shown == []


def test_length_scaled_floor_still_drops_repetitive_strings() -> None:
    """The lower floor is for short random tokens only: a long run of few characters is not a key."""
    rule = next(r for r in DEFAULT_RULES.rules if r.id == "high-entropy-token")
    assert rule.entropy_floor(32) == pytest.approx(math.log2(32) - 1.2)
    assert rule.entropy_floor(64) == rule.entropy == 4.2
    for text in ("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaA1", "ababababababababababababababAB12", "0A0a" * 9):
        assert text in redact(f"value {text} end"), text
