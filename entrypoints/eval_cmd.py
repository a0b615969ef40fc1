"""`diagbot eval PATH`: a labelled grounding corpus through the real EvidenceGuard, printed as rates and misses."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from core.guard.corpus import MAX_FALSE_REJECT_RATE, CorpusError, EvalReport, run_corpus
from core.guard.rules import RuleSet

Print = Callable[[str], None]


def render_report(report: EvalReport, out: Print = print) -> None:
    """Per category: block rate over invented cases, false-reject rate over honest ones; then every miss."""
    out(f"{'category':28} {'blocked':>12} {'false rejects':>15}")
    for name, stats in report.categories().items():
        blocked = f"{stats.blocked}/{stats.invented}" if stats.invented else "-"
        rejected = f"{stats.rejected}/{stats.honest}" if stats.honest else "-"
        out(f"{name:28} {blocked:>12} {rejected:>15}")
    out(f"total: {len(report.results)} cases; blocked {report.block_rate:.1%} of {report.invented} invented, "
        f"false rejects {report.false_reject_rate:.1%} of {report.honest} honest "
        f"(goal: 100% blocked, at most {MAX_FALSE_REJECT_RATE:.0%} false rejects)")
    for miss in report.misses:
        expected = "valid" if miss.case.expect.valid else f"rejected with {sorted(miss.case.expect.codes)}"
        got = "valid" if miss.valid else f"rejected with {sorted(set(miss.codes))}"
        out(f"MISS {miss.case.id} [{miss.case.category}]: expected {expected}, got {got}")
        for message in miss.messages[:5]:
            out(f"    {message}")


async def run_eval(path: Path, rules: RuleSet, out: Print = print) -> int:
    """0 when the corpus meets the goal, 1 when it does not, 2 when it cannot be read."""
    try:
        report = await run_corpus(path, rules)
    except CorpusError as exc:
        out(f"diagbot eval: {exc}")
        return 2
    render_report(report, out)
    return 0 if report.passed else 1
