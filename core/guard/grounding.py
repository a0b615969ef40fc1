"""Quantity grounding (SPEC §5): every quantity of every published text is shown by the evidence that text rests on.

An analysis rests on the calls it cites; the conclusion, an action or a recommendation on the calls of the analyses
it is based on; the limitations (scope and missing info) on every referencable call of the run, arguments
included. Quantities are typed (core/guard/quantities): a claim is grounded by an evidence quantity of a compatible
kind, value and origin, or by a declared derivation, which is recorded for the snapshot. Anything else is
NUMBER_NOT_IN_EVIDENCE with a message naming the quantity, its kind and why.
"""

from __future__ import annotations

import marshal
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

from core.contracts.draft import AnalysisKind
from core.contracts.evidence import CanonicalRecord
from core.contracts.release import Derivation
from core.guard.inputs import Finding, GuardInput, dependent_items
from core.guard.quantities.derive import Stated, derive
from core.guard.quantities.evidence import CallEvidence
from core.guard.quantities.exact import exact_forms
from core.guard.quantities.explain import explain
from core.guard.quantities.extract import extract_with_text, is_limit_statement
from core.guard.quantities.extras import LIMIT_ARGUMENTS
from core.guard.quantities.forms import search_forms
from core.guard.quantities.listed_nouns import counts_what_is_listed, names_listed_table, noun_words
from core.guard.quantities.match import Context, grounds
from core.guard.quantities.model import CLOCK_KINDS, DAY_KINDS, NUMERIC_KINDS, Origin, Quantity, Shown
from core.guard.quantities.series_cues import series_stat
from core.guard.rules import NumericGroundingParams

CODE = "NUMBER_NOT_IN_EVIDENCE"
TIMES_AND_DAYS = CLOCK_KINDS | DAY_KINDS
SourceKey = tuple[bytes, bytes]
"""(projection_key, marshal bytes of the effective arguments): exactly determines a call's evidence."""
Answer = tuple[tuple[str, ...], tuple[tuple[str, str, str, float, tuple[str, ...], tuple[str, ...]], ...]]
"""A text's (violation messages, derivations as (quantity, kind, rule, value, inputs, ids)), path-free, for the
guard's item cache."""


@dataclass(frozen=True, slots=True)
class Published:
    """One published text and what it rests on."""

    path: str
    text: str
    calls: tuple[str, ...]
    context: Context


def published_texts(data: GuardInput, run_calls: Sequence[str]) -> Iterator[Published]:
    """Every text the release publishes, with the calls it rests on. An analysis is checked only when every call
    it cites is usable (otherwise its citations are already rejected, and its numbers would only repeat that);
    likewise a dependent item whose analyses are all checkable."""
    calls_of: dict[str, list[str] | None] = {}
    for i, item in enumerate(data.draft.analysis):
        cids: list[str] | None = list(dict.fromkeys(item.tool_call_ids))
        if cids and all(c in data.usable for c in cids):
            negative = item.kind is AnalysisKind.NEGATIVE_OBSERVATION
            yield Published(f"analysis[{i}].text", item.text, tuple(cids), Context(negative=negative))
        else:
            cids = None
        aid = item.analysis_id.strip()
        known = calls_of.get(aid, [])
        calls_of[aid] = None if known is None or cids is None else [*known, *cids]
    for prefix, text, refs in dependent_items(data.draft):
        bases = [calls_of.get(ref.strip()) for ref in refs if ref.strip() in calls_of]
        if not bases or any(base is None for base in bases):
            continue
        cids = list(dict.fromkeys(c for base in bases if base is not None for c in base))
        field = "action" if prefix.startswith("action_plan") else "text"
        yield Published(f"{prefix}.{field}", text, tuple(cids), Context())
    limitations = Context(limitations=True)
    yield Published("limitations.scope", data.draft.limitations.scope, tuple(run_calls), limitations)
    for i, info in enumerate(data.draft.limitations.missing_info):
        yield Published(f"limitations.missing_info[{i}]", info, tuple(run_calls), limitations)


_NOTHING = re.compile(
    r"\b(?:no|none|nothing|not|never|zero|without|neither|nor|absent|empty|0 (?:rows?|lines?|matches|results|hits))\b"
    r"|n't\b|\bfound no\b|\breturned no\b", re.IGNORECASE)


_CLAUSE_END = re.compile(r"[.;:!?()\[\]—–]|\s(?:but|while|whereas|although|and then)\s")


def says_nothing_matched(text: str, claim: Quantity) -> bool:
    """Whether the clause holding the claim states that a query found nothing (a negation or an empty result):
    'No deployment of 4.19.0 was found' does, '4.19.0 was rolled back; nothing else stood out' does not."""
    start = max((m.end() for m in _CLAUSE_END.finditer(text, 0, claim.start)), default=0)
    end = next((m.start() for m in _CLAUSE_END.finditer(text, claim.end)), len(text))
    return _NOTHING.search(text, start, end) is not None


class Grounder:
    """Grounds the texts of one check, with the guard's kept evidence and answers."""

    def __init__(self, data: GuardInput, records: Mapping[str, CanonicalRecord]) -> None:
        self.data = data
        self.records = records
        self.params: NumericGroundingParams = data.rules.numeric
        # per check, shared by the limitations pre-check and the grounding check: both see a call's one record
        # (the usable one when it is cited, else the run's)
        self._evidence = data.evidence
        self._allowed = frozenset(self.params.argument_keys) if self.params.allow_arguments else frozenset()
        self._params_key = self.params.model_dump_json()
        self._keys = data.source_keys

    def source_key(self, cid: str) -> SourceKey | None:
        """An exact key for a call's evidence, or None when it has none (then nothing about it is kept)."""
        if cid not in self._keys:
            projection = self.data.projection_keys.get(cid)
            try:
                arguments = marshal.dumps(self.records[cid].effective_arguments, 4)
            except ValueError:
                projection = None
            self._keys[cid] = None if projection is None else (projection, arguments)
        return self._keys[cid]

    def evidence(self, cid: str) -> CallEvidence:
        """The CallEvidence of a call, kept by the guard when it has a source key."""
        found = self._evidence.get(cid)
        if found is None:
            key = self.source_key(cid)
            record = self.records[cid]
            kept = self.data.caches.sources
            readings = self.data.readings
            found = (CallEvidence(record, readings) if key is None
                     else kept.get_or_make(key, lambda: CallEvidence(record, readings)))
            found.readings = readings  # a kept one reads with this check's memo (EvidenceGuard empties it after)
            found.window_slots = self.data.window_slots
            self._evidence[cid] = found
        return found

    def check(self, item: Published) -> Iterator[Finding]:
        """Findings for one text; its derivations are added to the check's record."""
        keys = tuple(self.source_key(c) for c in item.calls)
        memo = None
        if all(k is not None for k in keys):
            memo = (item.text, item.context, keys, self._params_key)
        answer = self.data.caches.items.get(memo) if memo is not None else None
        if answer is None:
            answer = self._answer(item)
            if memo is not None:
                self.data.caches.items.put(memo, answer)
        messages, derivations = answer
        for quantity, kind, rule, value, inputs, ids in derivations:
            self.data.derivations.append(
                Derivation(path=item.path, quantity=quantity, kind=kind, rule=rule, value=value, inputs=list(inputs),
                           tool_call_ids=list(ids))
            )
        for message in messages:
            yield Finding(CODE, item.path, message)

    def _answer(self, item: Published) -> Answer:
        kept = self.data.extracted.get(item.text)
        if kept is None:
            converted, found = extract_with_text(item.text)
            kept = self.data.extracted[item.text] = (converted, tuple(found))
        text, claims = kept
        calls = [self.evidence(c) for c in item.calls if c in self.records]
        series = any(c.has_series for c in calls)
        stated: list[Stated] = []
        pending: list[Quantity] = []
        seen: dict[tuple[object, ...], Shown | None] = {}
        beyond: list[Quantity] = []
        for claim in claims:
            if self._exempt(claim):
                continue
            if isinstance(claim.value, float) and not math.isfinite(claim.value):
                beyond.append(claim)  # 1e400: beyond floats, so no evidence value shows it; searched and derived never
                continue
            if (
                claim.kind in NUMERIC_KINDS
                and any(_limit_is(call, claim.value) for call in calls)
                and is_limit_statement(text, claim)
            ):
                claim = replace(claim, limit_cue=True)  # a copy: the extracted claims are kept for this check
            stat = series_stat(text, claim.start) if series and claim.kind not in TIMES_AND_DAYS else None
            identity = (claim.kind, claim.value, claim.clock, claim.tolerance, claim.limit_cue, claim.bound, stat,
                        item.context.negative and says_nothing_matched(text, claim))
            if identity in seen:  # each distinct quantity is searched (and reported) once per text
                earlier = seen[identity]
                if earlier is not None:
                    stated.append(Stated(claim, earlier))  # but both '20's of 'active=20 of max_size=20' are inputs
                continue
            context = item.context
            if context.negative:
                context = replace(context, nothing_matched=says_nothing_matched(text, claim))
            shown = seen[identity] = self._direct(claim, calls, context, stat)
            if shown is None:
                pending.append(claim)
            else:
                stated.append(Stated(claim, shown))
        messages = [explain(claim, calls, item.context) for claim in beyond]
        derivations = []
        for claim in pending:
            derived = derive(claim, stated, calls, text)
            if derived is None:
                messages.append(explain(claim, calls, item.context))
            else:
                # a derived quantity may feed the next derivation ("5 of the 493 matches are shown (1%)")
                source = derived.tool_call_ids[0] if derived.tool_call_ids else ""
                stated.append(Stated(claim, Shown(claim, Origin.RESULT, source)))
                derivations.append(
                    (claim.text, claim.kind.value, derived.rule, derived.value, derived.inputs, derived.tool_call_ids)
                )
        return tuple(messages), tuple(derivations)

    def _exempt(self, claim: Quantity) -> bool:
        params = self.params
        if params.ignore:
            written = claim.text.lstrip("xXvV#").replace(",", "")
            if written in params.ignore or claim.text in params.ignore:
                return True
        return params.min_digits > 1 and 0 < sum(ch.isdigit() for ch in claim.text) < params.min_digits

    def _direct(self, claim: Quantity, calls: Sequence[CallEvidence], context: Context,
                stat: str | None = None) -> Shown | None:
        """An evidence quantity that grounds the claim directly, cheapest searches first. A value claimed as a series
        statistic ("peaked at", "averaged") is grounded by that statistic of a cited series only."""
        allowed = self._allowed
        nouns = noun_words(claim)
        # a count of the rows a call lists ('5 alerts' of FROM alerts) rests on its count or a cell its noun names
        listing = frozenset(c.tool_call_id for c in calls if names_listed_table(nouns, c)) if nouns else frozenset()

        def accept(shown: Shown) -> bool:
            if shown.origin is not Origin.RESULT and shown.field not in allowed and not shown.field.startswith("window_"):
                return False
            if listing and shown.tool_call_id in listing and not counts_what_is_listed(nouns, shown):
                return False
            return grounds(claim, shown, context)

        if stat is not None and claim.kind not in TIMES_AND_DAYS and any(c.has_series for c in calls):
            for call in calls:
                if call.has_series:
                    found = call.search_index(lambda s: s.field == stat and accept(s))
                    if found is not None:
                        return found
            calls = [c for c in calls if not c.has_series]

        query = context.negative or context.limitations
        # the cheapest first: a time or date against the few window values (no result text is built for them),
        # exact tokens in the results (str.find), then the window, limit and query values for the other claims that
        # may rest on them, then the results read lazily, and last the full index
        extra_first = claim.kind in TIMES_AND_DAYS
        if extra_first:
            for call in calls:
                found = call.search_extra(accept, query, claim)
                if found is not None:
                    return found
        exact = exact_forms(claim)
        if exact is not None:
            for call in calls:
                if call.tool_call_id not in listing and call.find_exact(*exact):
                    return Shown(claim, Origin.RESULT, call.tool_call_id)
        if not extra_first and (query or (claim.kind in NUMERIC_KINDS and claim.limit_cue)):
            for call in calls:
                found = call.search_extra(accept, query)
                if found is not None:
                    return found
        forms = search_forms(claim)
        standalone = claim.kind in NUMERIC_KINDS
        for call in calls:
            if not standalone and call.has_series:
                continue  # the text search reads a series' values as plain numbers: its index types them
            found = call.find(forms, accept, standalone)
            if found is not None:
                return found
        for call in calls:
            found = call.search_index(accept)
            if found is not None:
                return found
        return None


def _limit_is(call: CallEvidence, value: object) -> bool:
    return any(call.arguments.get(key) == value for key in LIMIT_ARGUMENTS)


def referencable_run_calls(data: GuardInput) -> dict[str, CanonicalRecord]:
    """The calls the limitations rest on: every referencable call of the run when the guard read them, else the
    cited usable ones (enough when those already ground the limitations)."""
    return dict(data.run_calls) if data.run_calls is not None else dict(data.usable)


def check_numeric_grounding(data: GuardInput) -> Iterator[Finding]:
    """NUMBER_NOT_IN_EVIDENCE for each distinct ungrounded quantity of every published text."""
    records = referencable_run_calls(data)
    grounder = Grounder(data, {**records, **data.usable})
    for item in published_texts(data, list(records)):
        yield from grounder.check(item)


def limitations_need_run_calls(data: GuardInput) -> bool:
    """Whether the limitations state a quantity the cited calls do not ground (then the guard reads the run's calls)."""
    if data.run_calls is not None:
        return False
    grounder = Grounder(data, dict(data.usable))
    texts = [t for t in published_texts(data, list(data.usable)) if t.context.limitations]
    saved = len(data.derivations)
    needed = any(True for t in texts for _ in grounder.check(t))
    del data.derivations[saved:]
    return needed
