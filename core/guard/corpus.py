"""A labelled grounding corpus run through the real EvidenceGuard (`diagbot eval PATH`).

A corpus is a folder (or one JSONL file) of cases, one JSON object a line: the tool calls of the case's run (named
from the folder's `records.jsonl`, real canonical records, or given inline), a draft, and the expected result
(valid or not, and the violation codes a rejection must include). Each case runs in a fresh run of its own. An
"invented" case (expected invalid) is blocked when the guard rejects it with the expected codes; an "honest" case
(expected valid) is falsely rejected when the guard rejects it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from core.contracts.draft import DiagnosisDraft
from core.contracts.evidence import CanonicalRecord
from core.guard.evidence_guard import EvidenceGuard
from core.guard.rules import RuleSet
from core.stores.canonical import InMemoryCanonicalStore

RECORDS_FILE = "records.jsonl"
MAX_FALSE_REJECT_RATE = 0.02
"""What CI accepts (issue 9): every invented case blocked, at most 2 % of honest cases rejected."""


class CorpusError(ValueError):
    """The corpus cannot be read; the message names the file and line."""


class Expected(BaseModel):
    valid: bool
    codes: list[str] = Field(default_factory=list, description="Codes a rejection must include.")


class Case(BaseModel):
    """One labelled case."""

    id: str = Field(min_length=1)
    category: str = Field(min_length=1)
    calls: list[str] = Field(default_factory=list, description="tool_call_ids from records.jsonl in this run.")
    records: list[CanonicalRecord] = Field(default_factory=list, description="More records of this run, inline.")
    draft: dict[str, Any]
    expect: Expected
    note: str = ""


@dataclass
class CaseResult:
    case: Case
    valid: bool
    codes: list[str]
    messages: list[str]

    @property
    def correct(self) -> bool:
        if self.case.expect.valid:
            return self.valid
        return not self.valid and set(self.case.expect.codes) <= set(self.codes)


@dataclass
class Category:
    invented: int = 0
    blocked: int = 0
    honest: int = 0
    rejected: int = 0


@dataclass
class EvalReport:
    results: list[CaseResult] = field(default_factory=list)

    def categories(self) -> dict[str, Category]:
        found: dict[str, Category] = {}
        for result in self.results:
            stats = found.setdefault(result.case.category, Category())
            if result.case.expect.valid:
                stats.honest += 1
                stats.rejected += not result.valid
            else:
                stats.invented += 1
                stats.blocked += result.correct
        return dict(sorted(found.items()))

    @property
    def invented(self) -> int:
        return sum(not r.case.expect.valid for r in self.results)

    @property
    def honest(self) -> int:
        return sum(r.case.expect.valid for r in self.results)

    @property
    def block_rate(self) -> float:
        blocked = sum(r.correct for r in self.results if not r.case.expect.valid)
        return blocked / self.invented if self.invented else 1.0

    @property
    def false_reject_rate(self) -> float:
        rejected = sum(not r.valid for r in self.results if r.case.expect.valid)
        return rejected / self.honest if self.honest else 0.0

    @property
    def misses(self) -> list[CaseResult]:
        return [r for r in self.results if not r.correct]

    @property
    def passed(self) -> bool:
        return self.block_rate == 1.0 and self.false_reject_rate <= MAX_FALSE_REJECT_RATE


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CorpusError(f"{path}:{number}: not JSON: {exc.msg}") from exc
        if not isinstance(value, dict):
            raise CorpusError(f"{path}:{number}: each line must be a JSON object")
        yield number, value


def load_corpus(path: Path) -> tuple[dict[str, CanonicalRecord], list[Case]]:
    """(shared records by tool_call_id, cases) of a corpus folder or cases file."""
    folder = path if path.is_dir() else path.parent
    if not path.exists():
        raise CorpusError(f"{path}: no such file or folder")
    records: dict[str, CanonicalRecord] = {}
    if (folder / RECORDS_FILE).is_file():
        for number, value in _lines(folder / RECORDS_FILE):
            try:
                record = CanonicalRecord.model_validate(value)
            except ValidationError as exc:
                raise CorpusError(f"{folder / RECORDS_FILE}:{number}: not a canonical record: {exc.errors()[0]['msg']}") from exc
            records[record.tool_call_id] = record
    files = sorted(p for p in folder.glob("*.jsonl") if p.name != RECORDS_FILE) if path.is_dir() else [path]
    cases: list[Case] = []
    for file in files:
        for number, value in _lines(file):
            try:
                case = Case.model_validate(value)
            except ValidationError as exc:
                raise CorpusError(f"{file}:{number}: not a case: {exc.errors()[0]['msg']}") from exc
            unknown = [c for c in case.calls if c not in records]
            if unknown:
                raise CorpusError(f"{file}:{number}: case {case.id!r} names calls not in {RECORDS_FILE}: {unknown}")
            cases.append(case)
    if not cases:
        raise CorpusError(f"{path}: no cases")
    return records, cases


async def run_case(case: Case, shared: dict[str, CanonicalRecord], rules: RuleSet) -> CaseResult:
    """One case in a fresh run through the real EvidenceGuard."""
    run_id = f"eval-{case.id}"
    store = InMemoryCanonicalStore()
    for record in [*(shared[c] for c in case.calls), *case.records]:
        await store.put(record.model_copy(update={"run_id": run_id}))
    try:
        draft = DiagnosisDraft.model_validate(case.draft)
    except ValidationError as exc:
        raise CorpusError(f"case {case.id!r}: the draft is not a DiagnosisDraft: {exc.errors()[0]['msg']}") from exc
    result = await EvidenceGuard(store, rules).check(run_id, draft)
    messages = [f"{v.path}: {v.message}" for v in result.violations]
    return CaseResult(case, result.valid, [v.code for v in result.violations], messages)


async def run_corpus(path: Path, rules: RuleSet) -> EvalReport:
    """Every case of the corpus, in file order."""
    shared, cases = load_corpus(path)
    report = EvalReport()
    for case in cases:
        report.results.append(await run_case(case, shared, rules))
    return report
