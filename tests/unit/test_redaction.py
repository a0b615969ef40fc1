"""Secret redaction: every secret kind is replaced, ordinary log lines pass unchanged."""

from __future__ import annotations

import pytest

from core.evidence.redaction import REDACTED, is_secret_key, redact, redact_value

SECRETS = [
    ("password kv", "login failed password=hunter2 user=bob", "hunter2"),
    ("password json", '{"user": "bob", "password": "s3cr\\"et!"}', "s3cr"),
    ("pwd colon", "pwd: abc123 for user", "abc123"),
    ("db_password env", "DB_PASSWORD='Tr0ub4dor&3'", "Tr0ub4dor"),
    ("authorization header", "Authorization: Bearer abcdefghijk123456", "abcdefghijk123456"),
    ("authorization json", '{"Authorization": "Basic dXNlcjpwYXNzd29yZA=="}', "dXNlcjpwYXNzd29yZA"),
    ("bearer alone", "retrying with bearer eyZ0abcdefgh12345 now", "eyZ0abcdefgh12345"),
    ("aws access key", "using key AKIAIOSFODNN7EXAMPLE now", "AKIAIOSFODNN7EXAMPLE"),
    ("aws secret", "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"),
    ("slack bot token", "token xoxb-1234567890-0987654321-abcdefghij in env", "xoxb-1234567890"),
    ("slack user token", "xoxp-1111111111-2222222222-abcdef sent", "xoxp-1111111111"),
    ("slack app token", "app token xapp-1-A0123456789-1234567890-abcdef", "xapp-1-A0123456789"),
    ("openai key", "OPENAI key sk-proj-abcdefghijklmnopqrstuvwxyz012345 rejected", "sk-proj-abcdefghij"),
    ("jwt", "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U end",
     "dozjgNryP4J3jVmNHl0w5N"),
    ("private key block", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nq83lkr\n-----END RSA PRIVATE KEY----- done",
     "MIIEowIBAAKCAQEA"),
    ("cut private key block", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA", "b3BlbnNzaC1rZXktdjEAAAA"),
    ("dsn mysql", "cannot reach mysql://app:Sup3rS3cret@db.internal:3306/shop", "Sup3rS3cret"),
    ("dsn redis", "REDIS_URL is redis://default:r3d1spass@cache:6379/0", "r3d1spass"),
    ("api_key", "calling with api_key=abcd1234efgh", "abcd1234efgh"),
    ("generic secret", "client_secret: 'zzz-top-secret'", "zzz-top-secret"),
    ("generic token env", "SLACK_BOT_TOKEN=foo-bar-baz", "foo-bar-baz"),
    ("github token", "pushed with ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghijklmnop"),
]


@pytest.mark.parametrize(("kind", "text", "secret"), SECRETS, ids=[s[0] for s in SECRETS])
def test_each_secret_kind_is_redacted(kind: str, text: str, secret: str) -> None:
    """The secret disappears and a [redacted] marker takes its place."""
    out = redact(text)
    assert secret not in out
    assert REDACTED in out


def test_dsn_keeps_scheme_user_and_host() -> None:
    """A DSN keeps everything an operator needs except the password."""
    assert redact("url=postgresql://svc:pa55@db:5432/app") == "url=postgresql://svc:[redacted]@db:5432/app"


def test_dsn_without_password_is_unchanged() -> None:
    """A DSN with only a user name carries no secret."""
    text = "connected to postgresql+asyncpg://postgres@127.0.0.1:5432/test"
    assert redact(text) == text


def test_quotes_around_redacted_values_are_kept() -> None:
    """JSON stays JSON after redaction."""
    assert redact('{"password": "xy", "user": "bob"}') == '{"password": "[redacted]", "user": "bob"}'
    assert redact("curl -H 'Authorization: Bearer abc.def.ghi123' https://x") == "curl -H 'Authorization: Bearer [redacted]' https://x"


ORDINARY = [
    "timeout after 30000ms calling payment-service",
    "HikariPool-1 - Connection is not available, request timed out after 30000ms.",
    "max_tokens=100 password_policy=strict tokens_used=5",
    "Bearer authentication failed; basic configuration loaded",
    "task-1234567890123456789012 started on disk-abcdefghijklmnopqrstuvwx",
    "GET /api/orders/42 200 12ms user_id=981 trace_id=4bf92f3577b34da6a3ce929d0e0e4736",
    "deployed order-service 4.18.0 at 2024-05-01T23:05:28Z (1,024 pods)",
    "see https://grafana.example.com/d/abc?orgId=1 for the dashboard",
    "",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_log_lines_are_not_touched(text: str) -> None:
    """No false positives on common log content: durations, versions, ids, URLs without credentials."""
    assert redact(text) == text


def test_redact_value_walks_nested_json_and_secret_keys() -> None:
    """Values under secret-named keys are replaced whatever their type; strings everywhere are scrubbed."""
    value = {
        "password": 12345,
        "nested": [{"api_key": "y", "msg": "token=abc"}, "sk-abcdefghijklmnopqrstuvwxyz"],
        "count": 3,
        "token_count": 7,
        "empty_secret": "",
    }
    assert redact_value(value) == {
        "password": REDACTED,
        "nested": [{"api_key": REDACTED, "msg": f"token={REDACTED}"}, "sk-…[redacted]"],
        "count": 3,
        "token_count": 7,
        "empty_secret": "",
    }


@pytest.mark.parametrize(
    ("key", "secret"),
    [("password", True), ("DB_PASSWORD", True), ("x-api-key", True), ("session_id", True), ("max_tokens", False),
     ("password_policy", False), ("user", False), ("service", False)],
)
def test_secret_key_names(key: str, secret: bool) -> None:
    """A key is secret when it ends with a secret keyword, not when it merely contains one."""
    assert is_secret_key(key) is secret


def test_already_redacted_values_stay_stable() -> None:
    """Redacting twice gives the same text (projections may be re-scrubbed downstream)."""
    once = redact("password=hunter2 and token=abc and mysql://u:p@h/db")
    assert redact(once) == once


def test_prefilter_sees_every_rule_keyword_in_any_case() -> None:
    """The keyword prefilter must select every rule whose keyword occurs, or texts holding that secret would pass."""
    from core.evidence.redaction import DEFAULT_RULES

    for rule in DEFAULT_RULES.rules:
        for word in rule.keywords:
            for text in (word, word.upper(), f"xx {word.title()} yy", f"{word[:-1]}{word}"):
                assert rule in DEFAULT_RULES.rules_for(text.lower()), (rule.id, text)


def test_long_and_short_keys_are_classified_alike() -> None:
    """The cached path (short keys) and the uncached one (long keys) give the same answers."""
    assert is_secret_key("db_password")
    assert not is_secret_key("max_tokens")
    assert is_secret_key("x" * 100 + "_token")
    assert not is_secret_key("x" * 100 + "_tokens")


@pytest.mark.parametrize(
    "text", ["REDIS_URL=redis://:r3d1sOnlyPw@cache:6379/0", "connect to rediss://:r3d1sOnlyPw@cache:6380 failed"]
)
def test_dsn_with_empty_user_and_password_is_redacted(text: str) -> None:
    """SPEC §3.1: DSNs with credentials are redacted, including the password-only form of Redis URLs."""
    assert "r3d1sOnlyPw" not in redact(text)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("DefaultEndpointsProtocol=https;AccountName=shop;AccountKey=Zm9vYmFyYmF6cXV4MTIz==;EndpointSuffix=x",
         "Zm9vYmFyYmF6cXV4MTIz"),
        ("ssh passphrase=correct-horse-battery", "correct-horse-battery"),
        ("SECRET_KEY_BASE=9f8e7d6c5b4a39281706f5e4d3c2b1a0", "9f8e7d6c5b4a39281706f5e4d3c2b1a0"),
    ],
)
def test_more_secret_formats_are_redacted(text: str, secret: str) -> None:
    """Azure storage account keys, passphrases and Rails' secret_key_base are secrets too."""
    assert secret not in redact(text)


def test_a_dsn_password_of_digits_and_slashes_is_not_taken_for_a_port() -> None:
    """Hypothesis found `postgres://app:00000/00@db`: a port-like password before @ is still a password."""
    from core.evidence.redaction import Redactor

    out = Redactor().redact("DSN postgres://app:00000/00@db:5432/shop")
    assert "00000/00" not in out
    assert "db:5432/shop" in out


def test_hidden_keys_of_small_and_large_mappings() -> None:
    """SecretKeyNames.hidden: secret-named keys, and a key/value record's value field when its name names a secret;
    the same for a mapping too large to be remembered, asked twice."""
    from core.evidence.redaction import SecretKeyNames

    names = SecretKeyNames()
    record = {"name": "smtp_password", "value": "x", "note": "n"}
    assert names.hidden(record) == {"value"}
    assert names.hidden({"name": "region", "value": "x", "note": "n"}) == set()
    big = {**{f"field_{i}": "v" for i in range(100)}, "api_key": "k", "long_" + "x" * 3000: "v"}
    assert names.hidden(big) == names.hidden(big) == {"api_key"}
