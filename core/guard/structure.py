"""Structure checks: the draft has content, items are complete, and references between items close."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from core.guard.inputs import Finding, GuardInput, dependent_items, shown_id


def _blank(text: str) -> bool:
    return not text.strip()


def _text_field(prefix: str) -> str:
    return f"{prefix}.action" if prefix.startswith("action_plan") else f"{prefix}.text"


def check_draft_structure(data: GuardInput) -> Iterator[Finding]:
    """DRAFT_EMPTY, ANALYSIS_EMPTY, ANALYSIS_ID_*, ANALYSIS_KIND/TEXT_MISSING, TOOL_REFERENCE_MISSING, TEXT_MISSING."""
    draft = data.draft
    dependents = list(dependent_items(draft))
    if not draft.analysis and not dependents:
        yield Finding("DRAFT_EMPTY", "draft", "the draft has no analysis, conclusion, action or recommendation")
        return
    if not draft.analysis:
        yield Finding("ANALYSIS_EMPTY", "analysis", "the draft has no analysis item for its other parts to rest on")
    id_counts = Counter(item.analysis_id.strip() for item in draft.analysis if item.analysis_id.strip())
    seen: set[str] = set()
    for i, item in enumerate(draft.analysis):
        aid = item.analysis_id.strip()
        if not aid:
            yield Finding("ANALYSIS_ID_MISSING", f"analysis[{i}].analysis_id", "the analysis has no analysis_id")
        elif id_counts[aid] > 1 and aid in seen:
            yield Finding(
                "ANALYSIS_ID_DUPLICATE", f"analysis[{i}].analysis_id", f"analysis_id {shown_id(aid)} is used more than once"
            )
        seen.add(aid)
        if item.kind is None:
            yield Finding(
                "ANALYSIS_KIND_MISSING", f"analysis[{i}].kind", "the analysis has no kind (NORMAL or NEGATIVE_OBSERVATION)"
            )
        if _blank(item.text):
            yield Finding("ANALYSIS_TEXT_MISSING", f"analysis[{i}].text", "the analysis has no text")
        if not item.tool_call_ids:
            yield Finding("TOOL_REFERENCE_MISSING", f"analysis[{i}].tool_call_ids", "the analysis cites no tool call")
    for prefix, text, _ in dependents:
        if _blank(text):
            yield Finding("TEXT_MISSING", _text_field(prefix), "the item has no text")


def check_analysis_references(data: GuardInput) -> Iterator[Finding]:
    """ANALYSIS_REFERENCE_MISSING (cites no analysis) and ANALYSIS_REFERENCE_UNKNOWN (cites an id not in the draft).

    A draft with no analysis at all is reported once, as ANALYSIS_EMPTY (locked structure rule), not per reference.
    """
    if not data.draft.analysis:
        return
    known = {item.analysis_id.strip() for item in data.draft.analysis if item.analysis_id.strip()}
    for prefix, _, refs in dependent_items(data.draft):
        if not refs:
            yield Finding("ANALYSIS_REFERENCE_MISSING", f"{prefix}.based_on_analysis_ids", "the item rests on no analysis")
        for j, ref in enumerate(refs):
            if ref.strip() not in known:
                yield Finding(
                    "ANALYSIS_REFERENCE_UNKNOWN",
                    f"{prefix}.based_on_analysis_ids[{j}]",
                    f"analysis id {shown_id(ref)} is not an analysis of this draft",
                )


def check_limitations_scope(data: GuardInput) -> Iterator[Finding]:
    """LIMITATIONS_SCOPE_MISSING: the limitations do not say what was examined."""
    if _blank(data.draft.limitations.scope):
        yield Finding("LIMITATIONS_SCOPE_MISSING", "limitations.scope", "the limitations do not say what was examined")
