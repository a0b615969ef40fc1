"""CallEvidence reads its head only as far as a search needs: every answer (and the head built afterwards) is the one
a scan of the whole head gives, in the same order, whatever searches came before."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from core.contracts.evidence import CanonicalRecord
from core.guard.quantities.evidence import CallEvidence
from core.guard.quantities.model import Shown
from core.tools.metrics.args import MetricsArgs, resolve_window
from core.tools.metrics.backend import Fetched
from core.tools.metrics.promql import check_query
from core.tools.metrics.result import raw_result
from core.tools.metrics.series import Series
from core.tools.metrics.units import SeriesUnit
from testkit.metrics import metrics_record

START = datetime(2026, 11, 27, 0, 0, tzinfo=UTC)


def _record(count: int) -> CanonicalRecord:
    fetched = Fetched([], [])
    for c in range(count):
        series = Series("http_server_requests_error_ratio", {"service": f"svc-{c}"})
        for i in range(60):
            series.add(START.timestamp() + 60 * i, round(0.002 + (0.5 if i >= 30 else 0) + (i % 7) / 1000, 4))
        fetched.series.append(series)
        fetched.units.append(SeriesUnit("ratio", "gauge"))
    args = MetricsArgs(query="http_server_requests_error_ratio", start=START, end=START + timedelta(minutes=60))
    raw = raw_result(fetched, check_query(args.query), resolve_window(args, START + timedelta(minutes=60)))
    return metrics_record("call_m", {"query": args.query}, raw, "run-lazy")


RECORD = _record(3)
FULL = CallEvidence(RECORD).head()


def _picker(n: int) -> tuple[str, object]:
    wanted = FULL[n % len(FULL)]
    return wanted.field, wanted.quantity.value


@given(st.lists(st.integers(min_value=0, max_value=10_000), min_size=1, max_size=6), st.booleans())
@settings(max_examples=60, deadline=None)
def test_searches_in_any_order_answer_as_a_scan_of_the_whole_head(picks: list[int], missing: bool) -> None:
    evidence = CallEvidence(RECORD)
    for n in picks:
        field, value = _picker(n)

        def accept(s: Shown, field: str = field, value: object = value) -> bool:
            return s.field == field and s.quantity.value == value

        expected = next((s for s in FULL if accept(s)), None)
        assert expected is not None
        assert evidence.search_index(accept) == expected
        if missing:
            assert evidence._first_in_head(lambda s: False) is None
    assert evidence.head() == FULL
    assert evidence.index() == FULL + evidence.points()
