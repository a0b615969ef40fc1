"""Fuzzing query_metrics' parsers: any exposition file is read or skipped (never a crash), any Prometheus answer
is series or one named ToolFailure."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import ToolFailure
from core.tools.metrics.openmetrics import MetricsFolder
from core.tools.metrics.prometheus import _parse_answer

LINES = st.sampled_from([
    "# TYPE x gauge", "# TYPE x counter", "# UNIT x seconds", "# HELP x help", "# EOF", "",
    'x{a="1"} 1 1795989600', 'x{a="1"} NaN 1795989615', "x 2", 'x_total{a="b"} 3 1795989600.5',
    'x{a="1",a="2"} 1 1', "x{a=1} 1 1", 'x{a="\\u"} 1 1', "x +Inf 1795989600", "x 1 -1", "x 1 1e40",
])
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(LINES, st.text(max_size=40)), max_size=30), st.sampled_from([".om", ".prom"]))
def test_any_file_is_read_or_named_unreadable(lines: list[str], suffix: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"f{suffix}"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="replace")
        snapshot = MetricsFolder(Path(tmp)).snapshot()
        assert snapshot.files + len(snapshot.unreadable) == 1
        for series in snapshot.series:
            assert len(series.times) == len(series.values)
            assert list(series.times) == sorted(series.times)


def _answer(data: Any) -> bytes:
    return json.dumps({"status": "success", "data": data}).encode()


@settings(max_examples=300, deadline=None)
@given(JSON, st.sampled_from([200, 400, 422, 500, 503]))
def test_any_answer_is_series_or_a_named_failure(data: Any, status: int) -> None:
    for body in (_answer(data), json.dumps(data).encode(), _answer({"resultType": "matrix", "result": data})):
        code = ""
        try:
            series, _, _ = _parse_answer(status, body, str)
        except ToolFailure as failure:
            code = failure.code
            series = []
        assert code.startswith("METRICS_") or status == 200
        assert all(len(s.times) == len(s.values) for s in series)
