"""Numeric grounding check: every number in the draft appears in the tool results it rests on."""

from __future__ import annotations

import marshal
from collections.abc import Iterator, Sequence

from core.guard.inputs import Finding, GuardInput, dependent_items
from core.guard.numbers import EvidenceText, canonical, evidence_text, numbers_in

SourceKey = tuple[bytes, bytes | None]
"""(projection_key, marshal bytes of the chosen arguments or None when arguments are not sources): exactly
determines a call's evidence text, so it can stand for it without building it."""

# data.caches.sources: source key -> the EvidenceText of its evidence text, skipping the text's rebuild.
# data.caches.items: (item text, source keys of its calls, ignore, min_digits) -> its ungrounded numbers, in order.


def check_numeric_grounding(data: GuardInput) -> Iterator[Finding]:
    """NUMBER_NOT_IN_EVIDENCE for each distinct ungrounded number of an analysis, conclusion, action or recommendation."""
    params = data.rules.numeric
    ignore = frozenset(canonical(t) for t in params.ignore)
    min_digits = params.min_digits
    argument_keys = params.argument_keys if params.allow_arguments else None
    sources: dict[str, EvidenceText] = {}
    source_keys: dict[str, SourceKey | None] = {}

    def source_key(cid: str) -> SourceKey | None:
        if cid in source_keys:
            return source_keys[cid]
        found: SourceKey | None = None
        projection = data.projection_keys.get(cid)
        if projection is not None:
            if argument_keys is None:
                found = (projection, None)
            else:
                arguments = data.usable[cid].effective_arguments
                try:
                    found = (projection, marshal.dumps({k: arguments[k] for k in argument_keys if k in arguments}, 4))
                except ValueError:  # not builtin values: no exact key
                    found = None
        source_keys[cid] = found
        return found

    def source(cid: str) -> EvidenceText:
        key = source_key(cid)
        found = data.caches.sources.get(key) if key is not None else None
        if found is None:
            record = data.usable[cid]
            found = EvidenceText(evidence_text(record.projection or {}, record.effective_arguments, argument_keys))
            if key is not None:
                data.caches.sources.put(key, found)
        sources[cid] = found
        return found

    def search(text: str, cids: Sequence[str]) -> Iterator[str]:
        for number in dict.fromkeys(numbers_in(text)):  # distinct numbers, first occurrence order
            if number in ignore or (min_digits > 1 and sum(ch.isdigit() for ch in number) < min_digits):
                continue
            for cid in cids:
                if (sources.get(cid) or source(cid)).grounds(number):
                    break
            else:
                yield number

    def ungrounded(path: str, text: str, cids: Sequence[str]) -> Iterator[Finding]:
        keys = tuple(key for key in map(source_key, cids) if key is not None)
        if len(keys) == len(cids):  # every source has an exact key: the answer is a pure function of this memo key
            memo = (text, keys, ignore, min_digits)
            numbers = data.caches.items.get(memo)
            if numbers is None:
                numbers = data.caches.items.put(memo, tuple(search(text, cids)))
        else:
            numbers = tuple(search(text, cids))
        for number in numbers:
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
