"""query_metrics' PromQL check: what is refused before anything is sent, and what the checked query tells the backends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.tools.metrics.args import MAX_POINTS, MetricsArgs, WindowRefused, default_step, resolve_window
from core.tools.metrics.promql import QueryRefused, check_query, known_check

NOW = datetime(2026, 11, 29, 23, 30, tzinfo=UTC)


@pytest.mark.parametrize(("query", "code"), [
    ("rate(foo[5m]", "METRICS_BAD_QUERY"),
    ("sum(", "METRICS_BAD_QUERY"),
    ("{}", "METRICS_BAD_QUERY"),  # promql-parser refuses it like Prometheus
    ('{job=~".*"}', "METRICS_BAD_QUERY"),
    ('{job=~".+"}', "METRICS_MATCHES_EVERYTHING"),
    ('{__name__!=""}', "METRICS_MATCHES_EVERYTHING"),
    ('{__name__=~".+", job!="x"}', "METRICS_MATCHES_EVERYTHING"),
    ('sum(rate({job=~".+"}[5m]))', "METRICS_MATCHES_EVERYTHING"),
    ('{a="1" or b=~".*"}', "METRICS_MATCHES_EVERYTHING"),
    ("foo[10y]", "METRICS_RANGE_TOO_LONG"),
    ("max_over_time(foo[400d])", "METRICS_RANGE_TOO_LONG"),
    ("rate(foo[5m])[60d:1h]", "METRICS_RANGE_TOO_LONG"),
    ("rate(foo[5m])[30d:1m]", "METRICS_TOO_MANY_POINTS"),
    ("rate(foo[5m])[30d:]", "METRICS_TOO_MANY_POINTS"),  # no step: the 1 m evaluation interval
    ("foo offset 400d", "METRICS_RANGE_TOO_LONG"),
    ("1 + 1", "METRICS_BAD_QUERY"),
    ('"text"', "METRICS_BAD_QUERY"),
    (" + ".join(["foo"] * 30), "METRICS_QUERY_TOO_COMPLEX"),
])
def test_refused_before_sending(query: str, code: str) -> None:
    for _ in range(2):  # checked, then answered from the memo of checks: the same refusal, raised afresh
        with pytest.raises(QueryRefused) as refused:
            check_query(query)
        assert refused.value.code == code
        assert refused.value.message
    with pytest.raises(QueryRefused):
        known_check(f" {query} ")


@pytest.mark.parametrize("query", [
    'hikaricp_connections_active{service="order-service"}',
    '{__name__=~"http_server_.*"}',
    'sum by (service) (rate(http_server_requests_total{status=~"5.."}[5m]))',
    'histogram_quantile(0.99, sum by (le) (rate(x_seconds_bucket{job="api"}[5m])))',
    "rate(foo[5m])[1d:5m]",
    'up{job!="x"} == 0',
])
def test_accepted(query: str) -> None:
    checked = check_query(query)
    assert checked.selectors
    assert check_query(f"{query}\n") is checked is known_check(query)
    assert known_check(f"{query} + 0") is None  # never checked: a caller on the event loop checks it in a thread


def test_plain_selector_and_what_it_matches() -> None:
    plain = check_query('hikaricp_connections_active{service="order-service",pool=~"Hikari.*"}').plain
    assert plain is not None
    assert plain.matches("hikaricp_connections_active", {"service": "order-service", "pool": "HikariPool-1"})
    assert not plain.matches("hikaricp_connections_active", {"service": "payment-service", "pool": "HikariPool-1"})
    assert not plain.matches("hikaricp_connections_idle", {"service": "order-service", "pool": "HikariPool-1"})
    assert check_query("rate(x[5m])").plain is None
    assert check_query("x offset 5m").plain is None
    by_name = check_query('{__name__="up", job="db"}').plain
    assert by_name is not None
    assert by_name.name == "up"


def test_lookback_is_the_longest_range() -> None:
    assert check_query("rate(a[5m]) + max_over_time(b[1h] offset 10m)").lookback_s == 4200


def test_window_defaults_and_bounds() -> None:
    window = resolve_window(MetricsArgs(query="up"), NOW)
    assert window.end == NOW
    assert window.start == NOW - timedelta(hours=1)
    assert window.step_s == default_step(3600) == 30
    assert window.points <= 240
    with pytest.raises(WindowRefused, match="at most 31 days"):
        resolve_window(MetricsArgs(query="up", start=NOW - timedelta(days=3650)), NOW)
    with pytest.raises(WindowRefused, match="11000"):
        resolve_window(MetricsArgs(query="up", step=0.1), NOW)
    assert resolve_window(MetricsArgs(query="up", instant=True), NOW).points == 1


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=1, max_value=31 * 86400))
def test_default_step_never_exceeds_the_point_cap(seconds: float) -> None:
    step = default_step(seconds)
    assert int(seconds // step) + 1 <= 240 <= MAX_POINTS


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=120))
def test_any_text_is_checked_or_refused_never_crashes(text: str) -> None:
    code = ""
    try:
        check_query(text)
    except QueryRefused as refused:
        code = refused.code
    assert code == "" or code.startswith("METRICS_")
