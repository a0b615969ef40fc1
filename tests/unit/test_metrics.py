"""Metrics: each method feeds its series, label values from outside are bounded, registries are per instance."""

from __future__ import annotations

import pytest

from core.observability.metrics import OTHER, Metrics
from tests.metrics_text import sample


def _text(metrics: Metrics) -> str:
    return metrics.render().decode()


def test_each_instance_has_its_own_registry() -> None:
    """Two Metrics objects never share a series (no module-level registry)."""
    a, b = Metrics(), Metrics()
    a.semantic_verdict("SUPPORTED")
    assert sample(_text(a), "diagbot_semantic_verdicts_total", verdict="SUPPORTED") == 1
    assert sample(_text(b), "diagbot_semantic_verdicts_total", verdict="SUPPORTED") == 0


def test_runs_by_intent_outcome_fallback_and_in_flight() -> None:
    """A finished run counts under its labels (`none` for no fallback); in-flight goes up and back down."""
    m = Metrics()
    with m.run_in_flight():
        assert sample(_text(m), "diagbot_runs_in_flight") == 1
        m.run_finished("DIAGNOSIS", "SAFE_FALLBACK", "SEMANTIC_UNSUPPORTED", 4.2)
    m.run_finished("CHAT", "SUCCESS", None, 0.3)
    text = _text(m)
    assert sample(text, "diagbot_runs_in_flight") == 0
    assert sample(text, "diagbot_runs_total", intent="DIAGNOSIS", outcome="SAFE_FALLBACK",
                  fallback_type="SEMANTIC_UNSUPPORTED") == 1
    assert sample(text, "diagbot_runs_total", intent="CHAT", outcome="SUCCESS", fallback_type="none") == 1
    assert sample(text, "diagbot_run_duration_seconds_count", intent="DIAGNOSIS") == 1
    assert sample(text, "diagbot_run_duration_seconds_sum", intent="DIAGNOSIS") == pytest.approx(4.2)


def test_in_flight_is_released_when_the_block_raises() -> None:
    """A run that raises still leaves the in-flight gauge."""
    m = Metrics()
    with pytest.raises(RuntimeError), m.run_in_flight():
        raise RuntimeError("boom")
    assert sample(_text(m), "diagbot_runs_in_flight") == 0


def test_guard_repair_and_verdicts() -> None:
    """Violations count per code and check; a clean check counts as valid; repairs and verdicts by result."""
    m = Metrics()
    m.guard_checked("initial", ["UNKNOWN_CALL", "UNKNOWN_CALL", "NUMBER_UNGROUNDED"])
    m.guard_checked("recheck", [])
    m.repair_attempted("repaired")
    m.semantic_verdict("UNAVAILABLE")
    text = _text(m)
    assert sample(text, "diagbot_guard_violations_total", code="UNKNOWN_CALL", check="initial") == 2
    assert sample(text, "diagbot_guard_violations_total", code="NUMBER_UNGROUNDED") == 1
    assert sample(text, "diagbot_guard_checks_total", check="initial", valid="false") == 1
    assert sample(text, "diagbot_guard_checks_total", check="recheck", valid="true") == 1
    assert sample(text, "diagbot_evidence_repairs_total", result="repaired") == 1
    assert sample(text, "diagbot_semantic_verdicts_total", verdict="UNAVAILABLE") == 1


def test_tool_names_outside_the_tool_set_are_folded() -> None:
    """A model inventing tool names cannot create series: unknown names count as `other`."""
    m = Metrics()
    m.tool_call("query_logs", "EVIDENCE_FOUND", 0.02)
    for i in range(50):
        m.tool_call(f"invented_{i}", "ERROR", 0.0)
    text = _text(m)
    assert sample(text, "diagbot_tool_calls_total", tool="query_logs", evidence_status="EVIDENCE_FOUND") == 1
    assert sample(text, "diagbot_tool_calls_total", tool=OTHER, evidence_status="ERROR") == 50
    assert "invented_" not in text


def test_slack_labels_are_bounded() -> None:
    """Slack method names and error codes outside their shapes become `other`; missing ones `none`."""
    m = Metrics()
    m.slack_api_error("chat.postMessage", "channel_not_found")
    m.slack_api_error("../../etc/passwd", "<html>oops</html>")
    m.slack_api_retry("chat.update", "rate_limited")
    m.slack_api_error(None, None)
    text = _text(m)
    assert sample(text, "diagbot_slack_api_errors_total", method="chat.postMessage", error="channel_not_found") == 1
    assert sample(text, "diagbot_slack_api_errors_total", method=OTHER, error=OTHER) == 1
    assert sample(text, "diagbot_slack_api_errors_total", method="none", error="none") == 1
    assert sample(text, "diagbot_slack_api_retries_total", method="chat.update", reason="rate_limited") == 1


def test_latency_histograms_and_queue_gauges() -> None:
    """Model, tool and ack latencies land in their histograms; the queue gauges take the last values."""
    m = Metrics()
    m.model_call("agent", True, 1.5)
    m.model_call("semantic_guard", False, 60.0)
    m.slack_ack("http", 0.004)
    m.queue_state(7, 12.5)
    text = _text(m)
    assert sample(text, "diagbot_model_call_duration_seconds_count", stage="agent", result="ok") == 1
    assert sample(text, "diagbot_model_call_duration_seconds_count", stage="semantic_guard", result="error") == 1
    assert sample(text, "diagbot_slack_ack_duration_seconds_bucket", mode="http", le="0.005") == 1
    assert sample(text, "diagbot_queue_depth") == 7
    assert sample(text, "diagbot_queue_oldest_job_age_seconds") == 12.5
