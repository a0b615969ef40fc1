"""A query's result unit and kind (what a series value may ground) and the series' words and projection bounds."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.contracts.evidence import EvidenceStatus
from core.tools.metrics.projection import fit_series
from core.tools.metrics.promql import check_query
from core.tools.metrics.result import series_item
from core.tools.metrics.series import Series
from core.tools.metrics.spec import MetricsSpec
from core.tools.metrics.units import SeriesUnit, expression_unit, metric_unit, name_unit
from core.tools.metrics.words import movement_words, value_words


@pytest.mark.parametrize(("query", "unit", "kind"), [
    ("http_server_requests_error_ratio", "ratio", "gauge"),
    ("instance:node_cpu_utilisation:ratio", "ratio", "gauge"),
    ("http_server_requests_seconds", "seconds", "gauge"),
    ("node_memory_MemAvailable_bytes", "bytes", "gauge"),
    ("http_server_requests_total", "", "counter"),
    ("rate(http_server_requests_total[5m])", "", "rate"),
    ("sum by (service) (rate(node_network_receive_bytes_total[5m]))", "bytes", "rate"),
    ("rate(process_cpu_seconds_total[5m])", "ratio", "gauge"),
    ("increase(http_server_requests_total[1h])", "", "increase"),
    ('sum(rate(x_total{code=~"5.."}[5m])) / sum(rate(x_total[5m]))', "ratio", "gauge"),
    ("sum(rate(x_total[5m])) / sum(rate(x_total[5m])) * 100", "percent", "gauge"),
    ("rate(x_seconds_sum[5m]) / rate(x_seconds_count[5m])", "seconds", "gauge"),
    ("histogram_quantile(0.99, sum by (le) (rate(x_seconds_bucket[5m])))", "seconds", "gauge"),
    ("max_over_time(x_total[1h])", "", "unknown"),
    ("count(up)", "", "count"),
    ("x_bytes * 2", "", "unknown"),
    ("avg_over_time(pool_usage_ratio[10m])", "ratio", "gauge"),
    ("pool_usage_ratio > 0.9", "ratio", "gauge"),
])
def test_expression_units(query: str, unit: str, kind: str) -> None:
    assert expression_unit(check_query(query).expr) == SeriesUnit(unit, kind)  # type: ignore[arg-type]


def test_metadata_types_a_name_without_suffix() -> None:
    assert metric_unit("mysql_global_status_slow_queries", "counter").kind == "counter"
    assert name_unit("foo_celsius") == "celsius"


@pytest.mark.parametrize(("value", "unit", "kind", "words"), [
    (0.14, "ratio", "gauge", "14 %"), (0.0021, "ratio", "gauge", "0.21 %"), (92.0, "percent", "gauge", "92 %"),
    (0.093, "seconds", "gauge", "93 ms"), (30.04, "seconds", "gauge", "30 s"), (1610612736, "bytes", "gauge", "1.5 GiB"),
    (4.2, "", "rate", "4.2/s"), (12345, "", "counter", "12,345"),
])
def test_value_words(value: float, unit: str, kind: str, words: str) -> None:
    assert value_words(value, unit, kind) == words


def _item(values: list[float], unit: str = "ratio") -> dict[str, Any]:
    series = Series("http_server_requests_error_ratio", {"service": "checkout-api"})
    for i, v in enumerate(values):
        series.add(1795992600 + 60 * i, v)
    return series_item(series, SeriesUnit(unit, "gauge"))


def test_movement_in_plain_words() -> None:
    assert movement_words(_item([0.002, 0.05, 0.16, 0.14])) == "rose from 0.2 % at 22:50 to 14 % at 22:53, peak 16 % at 22:52"
    assert movement_words(_item([0.5, 0.5, 0.5])).startswith("stayed near 50 %")


def test_fact_names_the_series_and_its_movement() -> None:
    spec = MetricsSpec()
    projection = {"count": 1, "series": [_item([0.002, 0.16, 0.14])]}
    fact = spec.fact(EvidenceStatus.EVIDENCE_FOUND, projection, {"query": "x"}, frozenset())
    assert fact.text.startswith("The http server requests error ratio of checkout-api rose from 0.2 % at 22:50")
    empty = spec.fact(EvidenceStatus.NO_EVIDENCE, {"count": 0, "series": []}, {"query": "x"}, frozenset())
    assert "does not show all is well" in empty.text


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(1, 500), st.integers(10, 300))
def test_fitted_series_stay_within_the_bound(n: int, points: int, label: int) -> None:
    items = []
    for k in range(n):
        series = Series("m_" + "x" * (label // 4), {"service": f"s{k}", "pod": "p" * label})
        for i in range(points):
            series.add(1795992600 + 15 * i, (i * 7919 % 101) / 7.0)
        items.append(series_item(series, SeriesUnit("seconds", "gauge")))
    shown, cut = fit_series(items, 300, 8192, lambda v, limit: str(v)[:limit])
    assert 300 + sum(len(json.dumps(s, separators=(",", ":"))) + 1 for s in shown) <= 8192
    assert shown, "at least the highest series is shown"
    for s in shown:
        assert {"first", "last", "min", "max", "mean"} <= set(s)
        times = [p[0] for p in s.get("points", [])]
        if times:
            assert s["max"]["t"] in times
            assert s["min"]["t"] in times
    assert cut == (len(shown) < n or any(len(s.get("points", [])) < min(points, 60) for s in shown))
