"""query_metrics as people see it: Show evidence draws each series as a sparkline with min/max/last and the points a
finding rests on; the source links to DIAG_METRICS_LINK_TEMPLATE; the fallback fact and progress speak plain words."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bot.render.links import SourceLinks
from bot.render.series import series_view_blocks, sparkline
from core.contracts.evidence import EvidenceStatus
from core.tools.contract import SeriesView
from core.tools.metrics.spec import MetricsSpec

RECORDS = Path(__file__).resolve().parents[2] / "eval" / "grounding" / "records.jsonl"


def _record(call_id: str) -> dict[str, Any]:
    for line in RECORDS.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["tool_call_id"] == call_id:
            return dict(record)
    raise AssertionError(call_id)


def _text(blocks: list[dict[str, Any]]) -> str:
    return json.dumps(blocks, ensure_ascii=False)


def test_show_evidence_draws_each_series() -> None:
    projection = _record("m_err_all")["projection"]
    view = MetricsSpec().evidence_view(projection)
    assert isinstance(view, SeriesView)
    blocks = series_view_blocks(view)
    text = _text(blocks)
    assert "http server requests error ratio of checkout-api" in text
    assert "max 86.2 % at 23:14" in text
    assert "last 57.1 % at 23:30" in text
    assert "Rests on: first 0 % at 22:30; peak 86.2 % at 23:14" in text
    assert "22:30–23:30 UTC, every 30 s" in text
    assert any(bar in text for bar in "▁█")
    assert len(text) < 6000


def test_sparkline_keeps_the_peak_when_squeezed() -> None:
    values: list[float | None] = [0.0] * 500
    values[333] = 9.0
    line = sparkline(values, width=40)
    assert len(line) <= 40
    assert "█" in line
    assert sparkline([]) == ""
    assert sparkline([None, None]) == ""


def test_the_source_links_to_the_metrics_template() -> None:
    record = _record("m_err")
    links = SourceLinks({"query_metrics": "https://grafana.example/explore?q={query}&from={start}&to={end}"})
    url = links.url("query_metrics", record["effective_arguments"], record["projection"])
    assert url == ("https://grafana.example/explore?q=http_server_requests_error_ratio%7Bservice%3D%22checkout-api%22%7D"
                   "&from=2026-11-29T22%3A30%3A00Z&to=2026-11-29T23%3A30%3A00Z")
    assert SourceLinks().url("query_metrics", record["effective_arguments"], record["projection"]) is None


def test_fallback_fact_and_progress_words() -> None:
    spec = MetricsSpec()
    record = _record("m_pool")
    fact = spec.fact(EvidenceStatus.EVIDENCE_FOUND, record["projection"], record["effective_arguments"], frozenset())
    assert fact.text == ("The hikaricp pool usage ratio of order-service HikariPool-1 rose from 20 % at 22:30 to 100 % "
                         "at 23:30")
    assert spec.subject(record["effective_arguments"], record["projection"]) == \
        'hikaricp_pool_usage_ratio{service="order-service"}, 22:30–23:30 UTC'
    from core.evidence.subjects import plural

    assert plural(3, spec.nouns.found) == "3 series"
    none = _record("m_none")
    empty = spec.fact(EvidenceStatus.NO_EVIDENCE, none["projection"], none["effective_arguments"], frozenset())
    assert "returned no series" in empty.text


def test_show_evidence_of_a_finding_citing_ten_metric_calls_fits_slack() -> None:
    """Ten cited query_metrics calls (three series each) render as valid Block Kit within Slack's limits."""
    from bot.render.evidence import evidence_view
    from bot.render.limits import MAX_BLOCKS, MAX_TOTAL_CHARS, fit_blocks
    from core.contracts.draft import Analysis, AnalysisKind, DiagnosisDraft
    from core.contracts.release import EvidenceSource, PublishedReport
    from tests.fakes.slack_server import validate_blocks

    record = _record("m_err_all")
    ids = [f"call_m{i}" for i in range(10)]
    draft = DiagnosisDraft.model_validate({
        "conclusion": None, "analysis": [], "action_plan": [], "recommendations": [], "limitations": {"scope": "x"}})
    draft.analysis = [Analysis(analysis_id="a1", kind=AnalysisKind.NORMAL, tool_call_ids=ids,
                               text="checkout-api's 5xx ratio peaked at 86.2 % at 23:14.")]
    sources = [EvidenceSource(tool_call_id=cid, tool_name="query_metrics", evidence_status=EvidenceStatus.EVIDENCE_FOUND,
                              label="query_metrics http_server_requests_error_ratio (3 series)") for cid in ids]
    report = PublishedReport(run_id="run_m", draft=draft, sources=sources,
                             evidence={cid: {**record["projection"], "tool_call_id": cid} for cid in ids},
                             evidence_arguments=dict.fromkeys(ids, record["effective_arguments"]))
    blocks = fit_blocks(evidence_view(report, 0), run_id=None)
    assert validate_blocks(blocks) is None, validate_blocks(blocks)
    assert len(blocks) <= MAX_BLOCKS
    assert len(json.dumps(blocks)) <= MAX_TOTAL_CHARS
    assert "max 86.2 % at 23:14" in json.dumps(blocks, ensure_ascii=False)
