"""Property tests (hypothesis): a planted secret is removed whatever it sits in: log lines, JSON, SQL rows, Markdown.

Each secret strategy of tests/unit/test_redaction_fuzz.py (typed tokens, DSNs, key=value passwords, anonymous
high-entropy tokens), and secrets named by a key in another field (name/value JSON, Kubernetes env entries, Markdown
and psql tables, key/value SQL rows), are planted in random surroundings of each kind and sent through what the tools
use: redact() on text, redact_value() on JSON values, project() on SQL rows. The hidden part never comes back.
"""

from __future__ import annotations

import json
import os
import string

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from core.contracts.evidence import RawResult
from core.evidence.projection import project
from core.evidence.redaction import redact, redact_value
from testkit.tool_names import ToolName
from tests.unit.test_redaction_fuzz import noise, secrets

_RUNS = settings(max_examples=int(os.environ.get("REDACTION_FUZZ_EXAMPLES", "60")), deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

words = st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=10)
sentence = st.lists(st.one_of(words, st.integers(0, 99999).map(str)), min_size=0, max_size=8).map(" ".join)
levels = st.sampled_from(["ERROR", "WARN", "INFO", "DEBUG"])
services = st.sampled_from(["order-service", "payments-api", "checkout-web"])
secret_names = st.sampled_from(["smtp_password", "DB_PASSWORD", "api_key", "client_secret", "auth_token",
                                "REDIS_PASS", "mail.smtp.password", "stripe_api_key", "GITHUB_TOKEN"])
# A password an operator chose: letters, digits and a symbol, with a digit (a bare word is shown as a placeholder).
passwords = st.text(alphabet=string.ascii_letters + string.digits + "!#%*+", min_size=8, max_size=24).filter(
    lambda p: any(c.isdigit() for c in p) and any(c.isalpha() for c in p))


def _absent(hidden: str, *outputs: str) -> None:
    for out in outputs:
        assert hidden not in out, out


@_RUNS
@given(st.datetimes().map(lambda d: d.isoformat()), levels, services, sentence, secrets, sentence)
def test_log_line(ts: str, level: str, service: str, before: str, secret: tuple[str, str], after: str) -> None:
    value, hidden = secret
    assume(hidden not in before + after)
    _absent(hidden, redact(f"{ts} {level} [{service}] {before} {value} {after}"))


@_RUNS
@given(sentence, secrets, st.dictionaries(words, sentence, max_size=4), st.booleans())
def test_json_document(before: str, secret: tuple[str, str], extra: dict[str, str], nested: bool) -> None:
    value, hidden = secret
    assume(hidden not in before and all(hidden not in k + v for k, v in extra.items()))
    document: dict[str, object] = {**extra, "message": f"{before} {value}"}
    if nested:
        document = {"event": document, "items": [document]}
    _absent(hidden, redact(json.dumps(document)), json.dumps(redact_value(document)),
            redact(json.dumps(document, indent=2)))


@_RUNS
@given(secret_names, passwords, st.dictionaries(words, sentence, max_size=3), st.booleans())
def test_secret_named_in_another_json_field(name: str, password: str, extra: dict[str, str], value_first: bool) -> None:
    """{"name": "smtp_password", "value": "..."} in either order, as a value and as text."""
    assume(all(password not in k + v for k, v in extra.items()))
    pair = {"value": password, "name": name} if value_first else {"name": name, "value": password}
    document = {**extra, "settings": [pair]}
    _absent(password, json.dumps(redact_value(document)), redact(json.dumps(document)),
            redact(json.dumps(document, indent=2)))


@_RUNS
@given(st.lists(st.one_of(st.integers(), sentence, st.none()), min_size=1, max_size=5), secrets, st.integers(0, 4))
def test_sql_row(cells: list[object], secret: tuple[str, str], where: int) -> None:
    value, hidden = secret
    assume(all(hidden not in str(c) for c in cells))
    row = list(cells)
    row.insert(min(where, len(row)), f"note {value}")
    columns = [f"c{i}" for i in range(len(row))]
    raw = RawResult(columns=columns, rows=[row], total_count=1, effective_arguments={"sql": "SELECT * FROM t"})
    _absent(hidden, json.dumps(project("call_1", ToolName.QUERY_MYSQL, raw, None)))


@_RUNS
@given(secret_names, passwords, st.integers(0, 3))
def test_key_value_sql_row(name: str, password: str, extra_columns: int) -> None:
    """A config table: the name column says smtp_password, the value column holds it (with or without the name
    column in the result, and with a WHERE naming it)."""
    columns = ["id", "name", "value"] + [f"x{i}" for i in range(extra_columns)]
    row: list[object] = [1, name, password] + ["-"] * extra_columns
    raw = RawResult(columns=columns, rows=[row], total_count=1, effective_arguments={"sql": "SELECT * FROM config"})
    _absent(password, json.dumps(project("call_1", ToolName.QUERY_MYSQL, raw, None)))
    only = RawResult(columns=["value"], rows=[[password]], total_count=1,
                     effective_arguments={"sql": f"SELECT value FROM config WHERE name = '{name}'"})
    _absent(password, json.dumps(project("call_2", ToolName.QUERY_MYSQL, only, None)))


@_RUNS
@given(st.lists(sentence, max_size=3), secrets, st.sampled_from(["table", "code", "quote", "list", "inline"]))
def test_markdown_runbook(paragraphs: list[str], secret: tuple[str, str], place: str) -> None:
    value, hidden = secret
    assume(all(hidden not in p for p in paragraphs))
    body = {
        "table": f"| setting | value |\n|---|---|\n| upstream | {value} |",
        "code": f"```bash\nexport X=1\n{value}\n```",
        "quote": f"> {value}",
        "list": f"- step one\n- use {value}\n- done",
        "inline": f"Run with `{value}` first.",
    }[place]
    _absent(hidden, redact("## Rotation\n\n" + "\n\n".join([*paragraphs, body])))


@_RUNS
@given(secret_names, passwords, st.sampled_from(["markdown", "psql", "yaml", "env-list"]))
def test_secret_named_in_a_table_or_manifest(name: str, password: str, shape: str) -> None:
    text = {
        "markdown": f"| name | value |\n|---|---|\n| {name} | {password} |\n| region | eu-west-1 |",
        "psql": f"     name      |   value\n---------------+-----------\n {name} | {password}\n region | eu-west-1",
        "yaml": f"config:\n  {name}: {password}\n  region: eu-west-1",
        "env-list": f"env:\n  - name: {name}\n    value: {password}\n  - name: REGION\n    value: eu-west-1",
    }[shape]
    out = redact(text)
    _absent(password, out)
    assert "eu-west-1" in out


@_RUNS
@given(noise, secrets, noise)
def test_text_around_a_secret_keeps_its_length_bounded(before: str, secret: tuple[str, str], after: str) -> None:
    """Redaction never grows a text by more than its markers (no runaway replacement)."""
    value, _ = secret
    text = before + " " + value + " " + after
    assert len(redact(text)) <= len(text) + 16 * (text.count(" ") + 2)
