"""EvidenceGuard: deterministic proof that a draft's citations are this run's real, consistent, grounded calls."""

from __future__ import annotations

from collections.abc import Sequence

from core.contracts.draft import DiagnosisDraft
from core.contracts.evidence import CanonicalRecord
from core.contracts.release import GuardResult, Severity, VerifiedEvidenceSnapshot, Violation
from core.guard.checks import CHECKS
from core.guard.grounding import limitations_need_run_calls
from core.guard.inputs import GuardCaches, GuardInput, cited_ids, referencable_problem
from core.guard.rules import RuleSet
from core.ports import CanonicalStore


class GuardUnavailable(Exception):
    """The canonical store could not be read, so nothing can be verified (never treated as valid)."""


class EvidenceGuard:
    """Runs the enabled rules of a RuleSet over a draft; no model, no rewriting.

    It keeps its own bounded, exact caches (GuardCaches) across checks: a re-check after repair is cheaper, never
    different. Nothing is shared between guards; a new guard is a cold one."""

    def __init__(self, canonical: CanonicalStore, rules: RuleSet) -> None:
        unimplemented = sorted(set(rules.rules) - set(CHECKS))
        if unimplemented:
            raise ValueError(f"rules without a check: {unimplemented}")
        self._canonical = canonical
        self._rules = rules
        self._caches = GuardCaches()

    @property
    def rule_set_version(self) -> str:
        """The version of the rules file this guard checks under."""
        return self._rules.rule_set_version

    async def _run_calls(self, run_id: str) -> dict[str, CanonicalRecord]:
        """Every referencable call of the run (the limitations rest on all of them); one more read, only when needed."""
        try:
            records = await self._canonical.list_run(run_id)
        except Exception as exc:
            raise GuardUnavailable(f"canonical store unreadable ({type(exc).__name__})") from exc
        return {r.tool_call_id: r for r in records if referencable_problem(run_id, r.tool_call_id, r) is None}

    async def check(self, run_id: str, draft: DiagnosisDraft, untrusted: Sequence[str] = ()) -> GuardResult:
        """Check a draft against this run's canonical records (one batched read); raise GuardUnavailable if unreadable.

        `untrusted`: the instruction-like spans of every projection the run's agent was shown (RunContext), so a
        draft cannot reproduce one even from a call it does not cite."""
        ids = cited_ids(draft)
        records = {}
        if ids:
            try:
                records = await self._canonical.get_many(run_id, ids)
            except Exception as exc:
                raise GuardUnavailable(f"canonical store unreadable ({type(exc).__name__})") from exc
        data = GuardInput.build(run_id, draft, self._rules, records, self._caches)
        try:
            return await self._check(run_id, data, ids, untrusted)
        finally:
            data.readings.clear()  # kept evidence may still point at it: nothing of this check stays behind
            data.window_slots.clear()

    async def _check(self, run_id: str, data: GuardInput, ids: list[str], untrusted: Sequence[str]) -> GuardResult:
        data.untrusted = tuple(untrusted)
        if self._rules.rules["numeric_grounding"].enabled and limitations_need_run_calls(data):
            data.run_calls = await self._run_calls(run_id)
        violations: list[Violation] = []
        warnings: list[Violation] = []
        for rule in self._rules.enabled_rules():
            sink = warnings if rule.severity is Severity.WARN else violations
            for finding in CHECKS[rule.id](data):
                sink.append(
                    Violation(
                        code=finding.code, path=finding.path, message=finding.message, severity=rule.severity, rule_id=rule.id
                    )
                )
        if violations:
            return GuardResult(valid=False, violations=violations, warnings=warnings)
        cited = [data.usable[cid] for cid in ids if cid in data.usable]
        # Validation builds new top-level dicts (the records are this check's own anyway): no copies needed here.
        snapshot = VerifiedEvidenceSnapshot(
            run_id=run_id,
            projections={r.tool_call_id: r.projection or {} for r in cited},
            effective_arguments={r.tool_call_id: r.effective_arguments for r in cited},
            rule_set_version=self._rules.rule_set_version,
            warnings=warnings,
            derivations=data.derivations,
        )
        return GuardResult(valid=True, snapshot=snapshot, warnings=warnings)
