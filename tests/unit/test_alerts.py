"""The Alertmanager payload model, the question built from an alert, the alert settings and the webhook's
Authorization parsing: documented shapes accepted, anything else refused cleanly (hypothesis), bounds kept."""

from __future__ import annotations

import base64
import contextlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import SecretStr, ValidationError

from bot.alert_webhook import presented_secret
from core.alerts.alertmanager import AlertGroup
from core.alerts.policy import AlertPolicy, alert_sources, invalid_entries
from core.alerts.question import MAX_QUESTION_CHARS, alertmanager_question, message_question
from core.evidence.instructions import CLOSE, OPEN
from core.settings import Settings
from tests.alert_payloads import HOSTILE, alert, group

# The example of prometheus.io's webhook_config page, as Alertmanager 0.27 sends it.
DOCUMENTED = {
    "receiver": "webhook", "status": "firing",
    "alerts": [{"status": "firing", "labels": {"alertname": "Test", "dc": "eu-west-1", "instance": "localhost:9090",
                                               "job": "prometheus24"},
                "annotations": {"description": "some description"},
                "startsAt": "2018-08-03T09:52:26.739266876+02:00", "endsAt": "0001-01-01T00:00:00Z",
                "generatorURL": "http://example.com:9090/graph?g0.expr=go_memstats_alloc_bytes+%3E+0&g0.tab=1",
                "fingerprint": "1a30ba71cca2921f"}],
    "groupLabels": {"alertname": "Test", "job": "prometheus24"},
    "commonLabels": {"alertname": "Test", "dc": "eu-west-1", "instance": "localhost:9090", "job": "prometheus24"},
    "commonAnnotations": {"description": "some description"}, "externalURL": "http://example.com:9093",
    "version": "4", "groupKey": '{}:{alertname="Test", job="prometheus24"}', "truncatedAlerts": 0}


def test_the_documented_payload_parses() -> None:
    parsed = AlertGroup.model_validate(DOCUMENTED)
    assert parsed.group_key.startswith("{}:")
    assert parsed.firing[0].name == "Test"
    assert parsed.alerts[0].ended is None


@pytest.mark.parametrize("change", [{"version": "3"}, {"version": 4}, {"status": "pending"}, {"alerts": []},
                                    {"groupKey": ""}, {"alerts": [{"status": "firing"}]}])
def test_other_versions_and_shapes_are_refused(change: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        AlertGroup.model_validate({**DOCUMENTED, **change})


@settings(max_examples=300, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner,
                                                                                max_size=4), max_leaves=30))
def test_any_json_is_parsed_or_refused_with_a_validation_error(value: Any) -> None:
    with contextlib.suppress(ValidationError):
        AlertGroup.model_validate_json(json.dumps(value))


_values = st.text(min_size=0, max_size=400)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(_values, _values), min_size=1, max_size=30), _values)
def test_the_question_is_bounded_and_marks_every_instruction(pairs: list[tuple[str, str]], extra: str) -> None:
    alerts = [alert(instance=f"i{i}", summary=summary + HOSTILE, extra_annotations={"note": note})
              for i, (summary, note) in enumerate(pairs)]
    question = alertmanager_question(AlertGroup.model_validate(group(*alerts)))
    assert len(question) <= MAX_QUESTION_CHARS + 40
    unmarked = question
    while OPEN in unmarked:
        start = unmarked.index(OPEN)
        end = unmarked.find(CLOSE, start)
        unmarked = unmarked[:start] + (unmarked[end + 1:] if end != -1 else "")
    assert "ignore previous instructions" not in unmarked.lower()
    assert len(message_question(extra * 30 + HOSTILE, "app")) <= MAX_QUESTION_CHARS + 40


def test_alert_sources_and_allowed_channels_are_allow_lists() -> None:
    assert alert_sources("C1:B1, C2:*, junk, C3:, :B4, C5:U1") == {("C1", "B1"), ("C2", "*")}
    base = Settings(diag_alert_sources="C1:B1,C2:*", diag_allowed_channels="C1,C7", diag_alert_channel="C7")
    policy = AlertPolicy.from_settings(base)
    assert policy.watches("C1", "B1")
    assert not policy.watches("C1", "B2")
    assert not policy.watches("C2", "B9")  # C2 is not in DIAG_ALLOWED_CHANNELS
    assert policy.alert_channel({"diag_channel": "C1"}) == "C1"
    assert policy.alert_channel({"diag_channel": "C9"}) == "C7"
    assert invalid_entries(Settings(diag_alert_sources="C1:B1,nope", diag_alert_channel="#alerts")) == [
        "nope", "#alerts"]
    assert AlertPolicy.from_settings(Settings(diag_alert_webhook_token=SecretStr(""))).webhook_token is None


@pytest.mark.parametrize(("header", "secret"), [
    ("Bearer tok", b"tok"), ("bearer  tok ", b"tok"), ("Basic " + base64.b64encode(b"u:tok").decode(), b"tok"),
    ("Basic " + base64.b64encode(b"u:").decode(), b""), ("Basic " + base64.b64encode(b"notok").decode(), None),
    ("Basic !!!", None), ("Token tok", None), ("", None), (None, None)])
def test_the_presented_secret(header: str | None, secret: bytes | None) -> None:
    assert presented_secret(header) == secret


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_any_authorization_header_is_read_without_raising(header: str) -> None:
    presented_secret(header)


def test_diagbot_check_says_what_is_on_and_what_is_wrong() -> None:
    from core.alerts.policy import check_alert_settings
    from core.health.result import Level

    assert check_alert_settings(Settings()).level is Level.SKIP
    on = check_alert_settings(Settings(diag_alert_webhook_token=SecretStr("x" * 32), diag_alert_channel="C1"))
    assert on.level is Level.OK
    assert "/alerts/alertmanager -> C1" in on.detail
    warn = check_alert_settings(Settings(diag_alert_webhook_token=SecretStr("short"), diag_alert_sources="C1:B1,x"))
    assert warn.level is Level.WARN
    assert "DIAG_ALERT_CHANNEL is not" in warn.detail
    assert "shorter than 16" in warn.detail
    assert "short" not in warn.detail.replace("shorter", "")  # the token itself is never shown
