"""Numeric grounding check: every number in the draft appears in the tool results it rests on."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from core.guard.inputs import Finding, GuardInput, dependent_items
from core.guard.numbers import EVIDENCE, EvidenceText, canonical, evidence_text, numbers_in


def check_numeric_grounding(data: GuardInput) -> Iterator[Finding]:
    """NUMBER_NOT_IN_EVIDENCE for each distinct ungrounded number of an analysis, conclusion, action or recommendation."""
    params = data.rules.numeric
    ignore = frozenset(canonical(t) for t in params.ignore)
    min_digits = params.min_digits
    argument_keys = params.argument_keys if params.allow_arguments else None
    sources: dict[str, EvidenceText] = {}

    def source(cid: str) -> EvidenceText:
        record = data.usable[cid]
        found = sources[cid] = EVIDENCE.get(evidence_text(record.projection or {}, record.effective_arguments, argument_keys))
        return found

    def ungrounded(path: str, text: str, cids: Sequence[str]) -> Iterator[Finding]:
        for number in dict.fromkeys(numbers_in(text)):  # distinct numbers, first occurrence order
            if number in ignore or (min_digits > 1 and sum(ch.isdigit() for ch in number) < min_digits):
                continue
            for cid in cids:
                if (sources.get(cid) or source(cid)).grounds(number):
                    break
            else:
                yield Finding("NUMBER_NOT_IN_EVIDENCE", path, f"the number {number} does not appear in the tool results cited")

    # An item is checked only when every call it rests on is usable; otherwise its citations are already rejected
    # by the (locked) ownership rule, and reporting its numbers too would only repeat that.
    calls_of_analysis: dict[str, list[str] | None] = {}
    for i, item in enumerate(data.draft.analysis):
        cids: list[str] | None = list(dict.fromkeys(item.tool_call_ids))
        if cids and all(c in data.usable for c in cids):
            yield from ungrounded(f"analysis[{i}].text", item.text, cids)
        else:
            cids = None
        aid = item.analysis_id.strip()
        known = calls_of_analysis.get(aid, [])
        calls_of_analysis[aid] = None if known is None or cids is None else [*known, *cids]
    for prefix, text, refs in dependent_items(data.draft):
        bases = [calls_of_analysis.get(ref.strip()) for ref in refs if ref.strip() in calls_of_analysis]
        if not bases or any(base is None for base in bases):
            continue
        cids = list(dict.fromkeys(c for base in bases if base is not None for c in base))
        field = "action" if prefix.startswith("action_plan") else "text"
        yield from ungrounded(f"{prefix}.{field}", text, cids)
