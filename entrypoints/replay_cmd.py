"""`diagbot replay RUN_ID` / `diagbot replay --since 7d`: stored drafts re-checked under the current rules file."""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from core.bootstrap import build_services, draft_archive
from core.guard.replay import Replayed, ReplaySummary, replay_all
from core.guard.rules import load_rules
from core.settings import Settings

Print = Callable[[str], None]


def _verdict(valid: bool, codes: list[str]) -> str:
    return "released" if valid else f"blocked ({', '.join(sorted(set(codes)))})"


def render_one(r: Replayed, version: str, out: Print = print) -> None:
    """Old and new verdicts of one stored draft and the codes that changed."""
    old = f"{_verdict(r.stored.valid, r.stored.codes)} under {r.stored.rule_set_version}"
    out(f"{r.stored.run_id} {r.stored.stage}: {old} -> {_verdict(r.valid, r.codes)} under {version}")
    if r.added or r.removed:
        out("    codes: " + ", ".join([*(f"+{c}" for c in r.added), *(f"-{c}" for c in r.removed)]))
    for message in r.messages[:5] if r.added else []:
        out(f"    {message}")


def render_summary(summary: ReplaySummary, version: str, out: Print = print) -> None:
    """Counts over many drafts: what the current rules would have blocked or released, and code changes."""
    runs = len({r.stored.run_id for r in summary.replayed})
    changed = [r for r in summary.replayed if r.changed]
    out(f"replayed {len(summary.replayed)} drafts of {runs} runs under {version}: {len(changed)} changed")
    out(f"  would now be blocked: {len(summary.newly_blocked)}"
        + (f" ({', '.join(sorted({r.stored.run_id for r in summary.newly_blocked}))})" if summary.newly_blocked else ""))
    out(f"  would now be released: {len(summary.newly_released)}"
        + (f" ({', '.join(sorted({r.stored.run_id for r in summary.newly_released}))})" if summary.newly_released else ""))
    for code, n in sorted(summary.code_changes().items()):
        out(f"  {code}: {n}")
    for r in changed:
        render_one(r, version, out)


async def run_replay(settings: Settings, run_id: str | None, since: timedelta | None, out: Print = print) -> int:
    """0 when something was replayed, 1 when no stored draft matched."""
    rules = load_rules(settings.diag_rules_file)
    services = await build_services(settings)
    try:
        archive = draft_archive(services.audit)
        if archive is None:
            print("diagbot replay: this audit store keeps no drafts", file=sys.stderr)
            return 1
        if run_id is not None:
            drafts = await archive.drafts(run_id)
        else:
            drafts = await archive.drafts_since(datetime.now(UTC) - (since or timedelta(days=7)), 10_000)
        if not drafts:
            print(f"diagbot replay: no stored drafts {'for run ' + run_id if run_id else 'in that period'}", file=sys.stderr)
            return 1
        summary = await replay_all(drafts, rules)
        if run_id is not None:
            for r in summary.replayed:
                render_one(r, rules.rule_set_version, out)
        else:
            render_summary(summary, rules.rule_set_version, out)
        return 0
    finally:
        await services.aclose()
