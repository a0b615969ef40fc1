"""The embedded backend's PromQL subset (core/tools/metrics/engine.py) on small hand-computed folders: what each
operation answers, Prometheus' own errors (same labelset, many-to-many), the sample budget; and any expression built
from the subset's grammar evaluates or fails with one named error (tests/integration/test_metrics_engine_prometheus.py
compares the subset with a real Prometheus)."""

from __future__ import annotations

import math
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import ToolFailure
from core.tools.metrics import engine
from core.tools.metrics.args import MetricsArgs
from core.tools.metrics.embedded import EmbeddedMetrics
from core.tools.metrics.engine_functions import label_replace
from core.tools.metrics.first_look import moved_most_query
from core.tools.metrics.tool import MetricsTool

T0 = int(datetime(2026, 11, 29, 22, 0, tzinfo=UTC).timestamp())
END = datetime.fromtimestamp(T0 + 7200, UTC)
FOLDER = "\n".join([
    "# TYPE pool_pending gauge",
    *(f'pool_pending{{service="a",pool="p"}} {0 if i <= 240 else 6} {T0 + 15 * i}' for i in range(481)),
    "# TYPE pool_active gauge",
    *(f'pool_active{{service="a",pool="p"}} {4 if i <= 240 else 8} {T0 + 15 * i}' for i in range(481)),
    *(f'pool_active{{service="b",pool="p"}} 3 {T0 + 15 * i}' for i in range(481)),
    "# TYPE http_requests counter",
    *(f'http_requests_total{{service="a",code="200"}} {10 * i} {T0 + 15 * i}' for i in range(481)),
    *(f'http_requests_total{{service="a",code="500"}} {0 if i <= 240 else 3 * (i - 240)} {T0 + 15 * i}'
      for i in range(481)),
    "# EOF", "",
])


@pytest.fixture(scope="module")
def tool() -> MetricsTool:
    folder = Path(tempfile.mkdtemp(prefix="engine-"))
    (folder / "m.om").write_text(FOLDER, encoding="utf-8")
    return MetricsTool(EmbeddedMetrics(folder), lambda: END)


async def _instant(tool: MetricsTool, query: str) -> dict[tuple[tuple[str, str], ...], float | None]:
    raw = await tool.run(MetricsArgs(query=query, end=END, instant=True))
    named = ({"__name__": i["metric"]} if i["metric"] else {} for i in raw.items)
    return {tuple(sorted({**i["labels"], **name}.items())): (i.get("last") or {}).get("v")
            for i, name in zip(raw.items, named, strict=True)}


def _one(values: dict[tuple[tuple[str, str], ...], float | None]) -> float | None:
    [value] = values.values()
    return value


async def test_rates_means_and_offsets(tool: MetricsTool) -> None:
    assert _one(await _instant(tool, 'rate(http_requests_total{code="200"}[5m])')) == pytest.approx(10 / 15)
    assert _one(await _instant(tool, 'increase(http_requests_total{code="500"}[10m])')) == pytest.approx(120)
    assert _one(await _instant(tool, 'avg_over_time(pool_pending[1h:1m])')) == pytest.approx(6 * 60 / 61)
    assert _one(await _instant(tool, 'avg_over_time(pool_pending[1h:1m] offset 1h)')) == 0
    assert _one(await _instant(tool, 'max_over_time(pool_active{service="a"}[2h])')) == 8
    assert _one(await _instant(tool, 'pool_active{service="a"} offset 90m')) == 4


async def test_aggregations_and_matching(tool: MetricsTool) -> None:
    assert _one(await _instant(tool, "sum(pool_active)")) == 11
    by_service = await _instant(tool, "max by (service) (pool_active)")
    assert sorted(v for v in by_service.values() if v is not None) == [3, 8]
    assert list(await _instant(tool, "topk(1, pool_active)")) == [
        (("__name__", "pool_active"), ("pool", "p"), ("service", "a"))]
    share = await _instant(tool, 'pool_pending / on(service, pool) pool_active{service="a"}')
    assert share == {(("pool", "p"), ("service", "a")): 0.75}
    assert await _instant(tool, "pool_active > 5") == {
        (("__name__", "pool_active"), ("pool", "p"), ("service", "a")): 8}
    assert set((await _instant(tool, "pool_active > bool 5")).values()) == {0, 1}
    assert len(await _instant(tool, 'pool_active unless pool_pending')) == 1
    assert len(await _instant(tool, 'pool_pending or pool_active')) == 2  # b's pool_active has no pending series


async def test_prometheus_own_errors(tool: MetricsTool) -> None:
    with pytest.raises(ToolFailure, match="same labelset"):
        await _instant(tool, '{service="a",__name__=~"pool_.+"} * 2')
    with pytest.raises(ToolFailure, match="many-to-many"):
        await _instant(tool, "pool_active / on(pool) pool_active")
    with pytest.raises(ToolFailure) as failed:
        await _instant(tool, 'label_replace(pool_active, "x", "$1", "service", "(")')
    assert failed.value.code == "METRICS_BAD_QUERY"


async def test_the_sample_budget_stops_a_heavy_query(tool: MetricsTool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "MAX_SAMPLES", 1000)
    with pytest.raises(ToolFailure) as failed:
        await tool.run(MetricsArgs(query="max_over_time(pool_active[1h])", end=END))
    assert failed.value.code == "METRICS_TOO_MANY_SAMPLES"


async def test_the_first_look_ranking_on_hand_computed_series(tool: MetricsTool) -> None:
    """Window 23:00-00:00 against 22:00-23:00: pending 0 -> 6 (from zero), the 500s 0 -> 0.2/s (from zero), active
    4 -> 8 (twice), the 200s unchanged (left out)."""
    got = await _instant(tool, moved_most_query("a", 3600))
    zero = "from zero, window level"
    named = {dict(k)["metric"] + ("/zero" if dict(k).get("change") == zero else ""): v for k, v in got.items()}
    assert named["pool_active"] == pytest.approx(2, rel=0.02)
    assert named["pool_pending/zero"] == pytest.approx(6, rel=0.02)
    assert named["http_requests_total/zero"] == pytest.approx(0.2, rel=0.05)
    assert "http_requests_total" not in named
    assert all(dict(k)["service"] == "a" for k in got)


async def test_a_repeated_subexpression_is_one_node_evaluated_once_per_time(
        tool: MetricsTool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiler gives every occurrence of one operation (by its PromQL text) one Shared node, whose value at a
    time is computed once: the first look's ranking writes its ratio three times. Same answers as the parts."""
    from core.tools.metrics import engine_binary

    calls = 0
    real = engine_binary.Binary.instant

    def counted(self: engine_binary.Binary, t: float, budget: engine.Budget) -> engine.Vector | float:
        nonlocal calls
        calls += 1
        return real(self, t, budget)

    monkeypatch.setattr(engine_binary.Binary, "instant", counted)
    twice = await _instant(tool, "(pool_active / 2) + (pool_active / 2)")
    assert calls == 2  # the sum and one division, not two
    assert twice == {(("pool", "p"), ("service", "a")): 8, (("pool", "p"), ("service", "b")): 3}
    calls = 0
    ranked = await _instant(tool, moved_most_query("a", 3600))
    assert calls == 10  # each distinct operation of the ranking once (19 occurrences)
    assert len(ranked) == 3


def test_label_replace_expands_like_go() -> None:
    labels = (("__name__", "x"), ("instance", "db:3306"))
    assert dict(label_replace(labels, "host", "$1", "instance", "([^:]+):.*"))["host"] == "db"
    assert dict(label_replace(labels, "host", "${1}-$2$$", "instance", "(db):(.*)"))["host"] == "db-3306$"
    assert label_replace(labels, "host", "$1", "instance", "nomatch") == labels
    assert "instance" not in dict(label_replace(labels, "instance", "", "instance", ".*"))


SELECTORS = st.sampled_from(["pool_active", 'pool_pending{service="a"}', "http_requests_total",
                             '{service="a",__name__=~"pool_.+"}', "missing_metric"])
RANGES = st.sampled_from(["[5m]", "[1h]", "[30m:1m]", "[10m:] offset 20m", "[1m] offset 1h"])
FUNCTIONS = st.sampled_from(["rate", "increase", "delta", "avg_over_time", "min_over_time", "max_over_time",
                             "sum_over_time", "count_over_time"])
INSTANT_FUNCTIONS = st.sampled_from(["abs", "ln", "log2", "sqrt", "exp", "ceil", "floor"])
OPERATORS = st.sampled_from(["+", "-", "*", "/", ">", "< bool", "==", "and", "or", "unless", "/ on(service)",
                             "* ignoring(code)"])
AGGREGATIONS = st.sampled_from(["sum", "avg", "min", "max", "count", "sum by (service)", "max without (pool)",
                                "topk(2,", "bottomk(1,"])


def _expressions() -> st.SearchStrategy[str]:
    leaves = SELECTORS | st.builds(lambda f, s, r: f"{f}({s}{r})", FUNCTIONS, SELECTORS, RANGES) | \
        st.sampled_from(["1", "0.5", "-2"])

    def grow(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return (st.builds(lambda a, op, b: f"({a} {op} {b})", inner, OPERATORS, inner)
                | st.builds(lambda f, a: f"{f}({a})", INSTANT_FUNCTIONS, inner)
                | st.builds(lambda agg, a: f"{agg} ({a})" if not agg.endswith(",") else f"{agg} {a})", AGGREGATIONS,
                            inner)
                | st.builds(lambda a: f'label_replace({a}, "m", "$1", "__name__", "(.+)")', inner))
    return st.recursive(leaves, grow, max_leaves=6)


@settings(max_examples=200, deadline=None)
@given(_expressions(), st.booleans())
def test_any_subset_expression_evaluates_or_fails_by_name(query: str, instant: bool) -> None:
    import asyncio

    folder = _FOLDER.get()
    tool = MetricsTool(EmbeddedMetrics(folder), lambda: END)
    args = MetricsArgs(query=query, end=END, start=END - timedelta(minutes=30), instant=instant)
    failure: ToolFailure | None = None
    try:
        raw = asyncio.run(tool.run(args))
    except ToolFailure as failed:
        failure = failed
    if failure is not None:
        assert failure.code.startswith("METRICS_"), (query, failure.code)
        assert failure.code != "METRICS_NEEDS_PROMETHEUS", (query, failure.message)
        return
    for item in raw.items:
        assert item["points_total"] >= 1
        for _, value in item["points"]:
            assert value is None or math.isfinite(value)


class _FOLDER:
    path: Path | None = None

    @classmethod
    def get(cls) -> Path:
        if cls.path is None:
            cls.path = Path(tempfile.mkdtemp(prefix="engine-fuzz-"))
            (cls.path / "m.om").write_text(FOLDER, encoding="utf-8")
        return cls.path


def test_sums_of_infinities_are_prometheus_floats() -> None:
    from core.tools.metrics.engine_functions import total

    assert math.isnan(total([math.inf, -math.inf]))
    assert total([1e308, 1e308]) == math.inf
    assert total([0.1] * 10) == 1.0


async def test_a_window_without_data_is_no_free_loop(tool: MetricsTool) -> None:
    """Steps that find no sample still count: a fine subquery over a month of range query before the data stops at
    the budget instead of looping for minutes."""
    with pytest.raises(ToolFailure) as failed:
        await tool.run(MetricsArgs(query="max_over_time(pool_active[3h:1s])", start=END - timedelta(days=30),
                                   end=END - timedelta(days=1), step=240))
    assert failed.value.code == "METRICS_TOO_MANY_SAMPLES"
