"""Re-check stored drafts under the current rules (`diagbot replay`): the old verdict, the new one, what changed.

A stored draft carries the canonical records and instruction-like spans its check read (core/release keeps them),
so the replay runs the real EvidenceGuard on exactly that input, whether or not Redis still has the records.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from core.contracts.evidence import CanonicalRecord
from core.contracts.release import StoredDraft
from core.guard.evidence_guard import EvidenceGuard
from core.guard.rules import RuleSet
from core.stores.canonical import InMemoryCanonicalStore


@dataclass
class Replayed:
    """One stored draft checked again."""

    stored: StoredDraft
    valid: bool
    codes: list[str]
    messages: list[str]

    @property
    def added(self) -> list[str]:
        """Codes the current rules report that the old check did not."""
        return sorted(set(self.codes) - set(self.stored.codes))

    @property
    def removed(self) -> list[str]:
        """Codes the old check reported that the current rules do not."""
        return sorted(set(self.stored.codes) - set(self.codes))

    @property
    def changed(self) -> bool:
        return self.valid != self.stored.valid or bool(self.added or self.removed)


@dataclass
class ReplaySummary:
    """What a rules change would have done to many stored drafts."""

    replayed: list[Replayed] = field(default_factory=list)

    @property
    def newly_blocked(self) -> list[Replayed]:
        return [r for r in self.replayed if r.stored.valid and not r.valid]

    @property
    def newly_released(self) -> list[Replayed]:
        return [r for r in self.replayed if not r.stored.valid and r.valid]

    def code_changes(self) -> Counter[str]:
        """'+CODE' / '-CODE' -> how many drafts gained / lost it."""
        changes: Counter[str] = Counter()
        for r in self.replayed:
            changes.update(f"+{c}" for c in r.added)
            changes.update(f"-{c}" for c in r.removed)
        return changes


async def recheck(stored: StoredDraft, rules: RuleSet) -> Replayed:
    """One stored draft through the real EvidenceGuard under `rules`, on the records its check read."""
    store = InMemoryCanonicalStore()
    for raw in stored.records:
        await store.put(CanonicalRecord.model_validate(raw))
    result = await EvidenceGuard(store, rules).check(stored.run_id, stored.draft, stored.untrusted)
    return Replayed(stored, result.valid, [v.code for v in result.violations],
                    [f"{v.path}: {v.message}" for v in result.violations])


async def replay_all(drafts: Sequence[StoredDraft], rules: RuleSet) -> ReplaySummary:
    """Every stored draft, in order."""
    summary = ReplaySummary()
    for stored in drafts:
        summary.replayed.append(await recheck(stored, rules))
    return summary
