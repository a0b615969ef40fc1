"""Numeric grounding check: every number in the draft appears in the tool results it rests on."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from core.guard.inputs import Finding, GuardInput, dependent_items
from core.guard.numbers import canonical, numbers_in, source_tokens


def check_numeric_grounding(data: GuardInput) -> Iterator[Finding]:
    """NUMBER_NOT_IN_EVIDENCE for each distinct ungrounded number of an analysis, conclusion, action or recommendation.

    Items whose citations resolve to no usable call are skipped here: the citation rules report them.
    """
    params = data.rules.numeric
    ignore = frozenset(canonical(t) for t in params.ignore)
    argument_keys = params.argument_keys if params.allow_arguments else None
    tokens: dict[str, frozenset[str]] = {}

    def tokens_of(cid: str) -> frozenset[str]:
        found = tokens.get(cid)
        if found is None:
            record = data.usable[cid]
            found = tokens[cid] = source_tokens(record.projection or {}, record.effective_arguments, argument_keys)
        return found

    def ungrounded(path: str, text: str, cids: Sequence[str]) -> Iterator[Finding]:
        reported: set[str] = set()
        for number in numbers_in(text):
            if number in reported or number in ignore or sum(ch.isdigit() for ch in number) < params.min_digits:
                continue
            if not any(number in tokens_of(cid) for cid in cids):
                reported.add(number)
                yield Finding("NUMBER_NOT_IN_EVIDENCE", path, f"the number {number} does not appear in the tool results cited")

    calls_of_analysis: dict[str, list[str]] = {}
    for i, item in enumerate(data.draft.analysis):
        cids = list(dict.fromkeys(c for c in item.tool_call_ids if c in data.parsed))
        calls_of_analysis.setdefault(item.analysis_id.strip(), []).extend(cids)
        if cids:
            yield from ungrounded(f"analysis[{i}].text", item.text, cids)
    for prefix, text, refs in dependent_items(data.draft):
        cids = list(dict.fromkeys(c for ref in refs for c in calls_of_analysis.get(ref.strip(), [])))
        if cids:
            field = "action" if prefix.startswith("action_plan") else "text"
            yield from ungrounded(f"{prefix}.{field}", text, cids)
