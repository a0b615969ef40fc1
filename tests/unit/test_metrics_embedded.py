"""The embedded query_metrics backend over OpenMetrics files, and the demo metrics' agreement with the demo's database."""

from __future__ import annotations

import sqlite3
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from core.errors import ToolFailure
from core.settings import DEMO_CLOCK, DEMO_DATA
from core.tools.metrics.args import MetricsArgs
from core.tools.metrics.embedded import EmbeddedMetrics
from core.tools.metrics.tool import MetricsTool

T0 = int(datetime(2026, 11, 29, 23, 0, tzinfo=UTC).timestamp())


def _tool(path: Path, now: datetime = datetime(2026, 11, 29, 23, 10, tzinfo=UTC)) -> MetricsTool:
    return MetricsTool(EmbeddedMetrics(path), lambda: now)


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


GAUGE = "\n".join([
    "# TYPE pool_usage_ratio gauge", "# UNIT pool_usage_ratio ratio", "# HELP pool_usage_ratio Pool use.",
    *(f'pool_usage_ratio{{service="a"}} {0.1 + i / 100:.2f} {T0 + 60 * i}' for i in range(10)),
    *(f'pool_usage_ratio{{service="b"}} 0.5 {T0 + 60 * i}' for i in range(3)),
    "# TYPE req counter", *(f'req_total{{service="a"}} {i * 10} {T0 + 60 * i}' for i in range(10)), "# EOF", "",
])


async def test_range_query_evaluates_like_prometheus(tmp_path: Path) -> None:
    _write(tmp_path, "x.om", GAUGE)
    start = datetime.fromtimestamp(T0, UTC)
    raw = await _tool(tmp_path).run(MetricsArgs(query='pool_usage_ratio{service="a"}', start=start,
                                                end=start + timedelta(minutes=9), step=60))
    [item] = raw.items
    assert item["unit"] == "ratio"
    assert item["kind"] == "gauge"
    assert item["first"] == {"t": "2026-11-29T23:00:00Z", "v": 0.1}
    assert item["max"] == {"t": "2026-11-29T23:09:00Z", "v": 0.19}
    assert item["points_total"] == 10
    assert len(item["points"]) == 10
    assert raw.effective_arguments["step"] == 60


async def test_lookback_ends_a_series_five_minutes_after_its_last_sample(tmp_path: Path) -> None:
    _write(tmp_path, "x.om", GAUGE)
    start = datetime.fromtimestamp(T0, UTC)
    raw = await _tool(tmp_path).run(MetricsArgs(query='pool_usage_ratio{service="b"}', start=start,
                                                end=start + timedelta(minutes=20), step=60))
    # samples at 0, 1, 2 min: steps up to 2 + 5 min see a value, later ones none
    assert raw.items[0]["points_total"] == 8


async def test_instant_and_ranking_by_peak(tmp_path: Path) -> None:
    _write(tmp_path, "x.om", GAUGE)
    end = datetime.fromtimestamp(T0 + 120, UTC)
    raw = await _tool(tmp_path).run(MetricsArgs(query="pool_usage_ratio", end=end, instant=True))
    assert [i["labels"]["service"] for i in raw.items] == ["b", "a"]
    assert all(i["points_total"] == 1 for i in raw.items)


async def test_counters_are_counters(tmp_path: Path) -> None:
    _write(tmp_path, "x.om", GAUGE)
    raw = await _tool(tmp_path).run(MetricsArgs(query="req_total"))
    assert raw.items[0]["kind"] == "counter"


@pytest.mark.parametrize("query", ["histogram_quantile(0.9, req_total)", "req_total @ 1795989600",
                                   "req_total / on(service) group_left pool_usage_ratio", "sort(req_total)",
                                   "count_values(\"v\", req_total)", "req_total % 2"])
async def test_what_the_subset_lacks_needs_prometheus(tmp_path: Path, query: str) -> None:
    _write(tmp_path, "x.om", GAUGE)
    with pytest.raises(ToolFailure) as failed:
        await _tool(tmp_path).run(MetricsArgs(query=query))
    assert failed.value.code == "METRICS_NEEDS_PROMETHEUS"
    assert "DIAG_PROMETHEUS_URL" in failed.value.message


async def test_a_broken_file_is_skipped_and_named(tmp_path: Path) -> None:
    _write(tmp_path, "good.om", GAUGE)
    _write(tmp_path, "bad.om", "# TYPE x gauge\nx{ 1 2\n# EOF\n")
    _write(tmp_path, "text.prom", f'# TYPE y gauge\ny{{k="v"}} 3 {T0 * 1000}\ny{{k="w"}} 4\n')
    raw = await _tool(tmp_path).run(MetricsArgs(query='y{k="v"}'))
    assert raw.notes["unreadable_files"] == ["bad.om"]
    assert raw.notes["samples_without_timestamp_skipped"] == 1
    assert raw.items[0]["last"]["v"] == 3


async def test_missing_folder_and_no_match(tmp_path: Path) -> None:
    with pytest.raises(ToolFailure, match="does not exist"):
        await _tool(tmp_path / "nope").run(MetricsArgs(query="up"))
    _write(tmp_path, "x.om", GAUGE)
    raw = await _tool(tmp_path).run(MetricsArgs(query='pool_usage_ratio{service="zzz"}'))
    assert raw.items == []
    assert raw.total_count == 0


async def test_a_changed_file_is_read_again(tmp_path: Path) -> None:
    path = _write(tmp_path, "x.om", GAUGE)
    tool = _tool(tmp_path)
    assert len((await tool.run(MetricsArgs(query="pool_usage_ratio"))).items) == 2
    assert len((await tool.run(MetricsArgs(query="pool_usage_ratio * 2"))).items) == 2
    path.write_text(GAUGE.replace('service="b"', 'service="c"'), encoding="utf-8")  # same size, new mtime
    raw = await tool.run(MetricsArgs(query="pool_usage_ratio"))
    assert {i["labels"]["service"] for i in raw.items} == {"a", "c"}
    evaluated = await tool.run(MetricsArgs(query="pool_usage_ratio * 2"))  # the selections kept are the new file's
    assert {i["labels"]["service"] for i in evaluated.items} == {"a", "c"}


async def test_demo_metrics_agree_with_the_demo_database() -> None:
    tool = _tool(DEMO_DATA / "metrics", DEMO_CLOCK)
    raw = await tool.run(MetricsArgs(query='hikaricp_connections_active{service="order-service"}', step=60))
    points = dict(raw.items[0]["points"])
    db = sqlite3.connect(DEMO_DATA / "shop.db")
    try:
        rows = db.execute("SELECT ts, active FROM db_connection_pool_stats WHERE service = 'order-service' "
                          "AND ts >= '2026-11-29 22:30:00'").fetchall()
    finally:
        db.close()
    for ts, active in rows:
        assert points[ts.replace(" ", "T") + "Z"] == active
    ratio = await tool.run(MetricsArgs(query='http_server_requests_error_ratio{service="checkout-api"}'))
    assert ratio.items[0]["first"]["v"] == 0
    assert ratio.items[0]["max"]["v"] > 0.5


async def test_a_kept_compiled_query_answers_each_window_as_a_fresh_one(tmp_path: Path) -> None:
    """The compiled query is kept with the snapshot (one compile per text) and holds no evaluation's state: the same
    query at other times, and at many times in several threads at once, answers what a fresh backend answers."""
    _write(tmp_path, "x.om", GAUGE)
    query = ('avg_over_time(pool_usage_ratio{service="a"}[3m:1m]) / avg_over_time(pool_usage_ratio{service="a"}'
             '[3m:1m] offset 3m) or rate(req_total{service="a"}[3m:1m])')
    kept = EmbeddedMetrics(tmp_path)

    async def answer(backend: EmbeddedMetrics, minute: int) -> list[dict[str, object]]:
        now = datetime.fromtimestamp(T0 + 60 * minute, UTC)
        return (await MetricsTool(backend, lambda: now).run(MetricsArgs(query=query, instant=True))).items

    expected = {minute: await answer(EmbeddedMetrics(tmp_path), minute) for minute in range(3, 12)}
    assert any(expected.values())
    for minute in (*range(3, 12), *range(11, 2, -1)):
        assert await answer(kept, minute) == expected[minute]
    index = kept._indexed()
    [compiled] = index._compiled.values()

    def at(minute: int) -> list[tuple[dict[str, str], list[float]]]:
        from core.tools.metrics.engine import evaluate
        return [(s.labels, list(s.values)) for s in evaluate(compiled, [float(T0 + 60 * minute)])]

    serial = {minute: at(minute) for minute in range(3, 12)}
    with ThreadPoolExecutor(4) as pool:
        minutes = [3 + i % 9 for i in range(200)]
        assert list(pool.map(at, minutes)) == [serial[m] for m in minutes]
