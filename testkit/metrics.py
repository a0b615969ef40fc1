"""query_metrics canonical records built as the boundary builds them (the real spec's projection through the
projection's own cleaning), for the eval corpus, benches and tests."""

from __future__ import annotations

from typing import Any

from core.contracts.evidence import CanonicalRecord, EvidenceStatus, InvocationState, RawResult
from core.evidence.projection import clean_text, safe_text
from core.settings import DEMO_CLOCK
from core.tools.metrics.spec import MetricsSpec
from core.tools.metrics.tool import TOOL_NAME


class _Clean:
    """The projection's cleaning (redaction, instruction marks, caps) as the contract's Cleaner."""

    item_chars = 500
    columns = 50

    def __init__(self) -> None:
        self.was_cut = False

    def text(self, value: Any, limit: int) -> str:
        out, cut = clean_text(value, limit)
        self.was_cut |= cut
        return out

    def redact(self, text: str) -> str:
        return safe_text(text)

    def scalar(self, value: Any, limit: int) -> Any:
        return value if value is None or isinstance(value, bool | int | float) else self.text(value, limit)

    def cut(self) -> None:
        self.was_cut = True


def metrics_record(call_id: str, arguments: dict[str, Any], raw: RawResult, run_id: str) -> CanonicalRecord:
    """The canonical record the boundary keeps for a query_metrics call with this raw result."""
    spec, clean = MetricsSpec(), _Clean()
    series = spec.project_items(raw, 50, clean)
    status = EvidenceStatus.EVIDENCE_FOUND if series else EvidenceStatus.NO_EVIDENCE
    projection = {"tool_call_id": call_id, "tool_name": TOOL_NAME, "evidence_status": status.value,
                  "count": raw.total_count, "truncated": clean.was_cut, "error": None,
                  **spec.envelope(raw, clean), "series": series}
    moment = DEMO_CLOCK
    return CanonicalRecord(run_id=run_id, tool_call_id=call_id, tool_name=TOOL_NAME, arguments=arguments,
                           effective_arguments=raw.effective_arguments, state=InvocationState.READY,
                           evidence_status=status, projection=projection, started_at=moment, finished_at=moment,
                           duration_ms=1.0)
