"""`make preview`: each message kind rendered by the real renderers from one incident, as HTML and PNG (README pictures).

The outcomes come from the real release pipeline (EvidenceGuard, fallback factory) over recorded tool results of a
checkout-api pool exhaustion; only the semantic judge is fixed (SUPPORTED for the report, UNSUPPORTED for the
fallback). HTML goes to docs/preview/; with a Chromium binary (Debian: `apt-get install chromium`) each page is
screenshotted headless to docs/preview/<kind>.png.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from bot.render.evidence import evidence_view
from bot.render.limits import fit_blocks
from bot.render.message import render_outcome
from bot.render.progress import ProgressState
from core.contracts.draft import DiagnosisDraft
from core.contracts.evidence import CanonicalRecord, EvidenceStatus
from core.contracts.progress import ProgressStage, ProgressUpdate, ToolProgress
from core.contracts.release import Outcome, ReleaseOutcome, SemanticVerdict, SemanticVerdictKind
from core.guard.evidence_guard import EvidenceGuard
from core.guard.rules import load_rules
from core.release.release import DiagnosisRelease
from core.run import RunContext
from core.service.timeline import RunTimeline
from core.stores.canonical import InMemoryCanonicalStore
from core.stores.memory import InMemoryTimelineStore
from core.tools.registry import spec_for
from entrypoints.preview_html import blocks_page, page, plan_html
from testkit.release import FixedJudge, ScriptedRepairer, knowledge_record, logs_record, sql_record

RUN = "run_3f9c2a71d04e4b1f9a6e8d2c5b7a1e90"
QUESTION = "why is checkout-api timing out since 23:00?"
OUT = Path("docs/preview")
WIDTH = 820
TIMEOUT = "HikariPool-1 - Connection is not available, request timed out after 30000ms."
POOL_SQL = ("SELECT ts, active, idle, waiting, max_size FROM db_connection_pool_stats "
            "WHERE service = 'checkout-api' ORDER BY ts DESC LIMIT 6")
POOL_ROWS = [["2026-11-29 23:08:00", 20, 0, 14, 20], ["2026-11-29 23:07:00", 20, 0, 11, 20],
             ["2026-11-29 23:06:00", 20, 0, 9, 20], ["2026-11-29 23:05:00", 19, 1, 3, 20],
             ["2026-11-29 23:04:00", 12, 8, 0, 20], ["2026-11-29 23:03:00", 9, 11, 0, 20]]


def records() -> list[CanonicalRecord]:
    """The incident's tool calls: timeouts in the logs, the pool samples, the runbook, an empty OOM query."""
    lines = [(f"2026-11-29T23:0{m}:{s:02d}.120Z", "ERROR", TIMEOUT) for m, s in ((5, 28), (6, 2), (7, 41))]
    return [
        logs_record(RUN, "call_logs", lines, service="checkout-api", count=42),
        sql_record(RUN, "call_pool", POOL_SQL, ["ts", "active", "idle", "waiting", "max_size"], POOL_ROWS),
        knowledge_record(RUN, "call_kb", "HikariCP pool exhaustion", [(
            "runbooks/hikaricp-pool-exhaustion.md", "Diagnosis",
            "All connections active and requests waiting means the pool is exhausted. Look for long transactions "
            "or leaked connections before raising maximumPoolSize.")]),
        logs_record(RUN, "call_oom", [], service="checkout-api", query="OutOfMemoryError"),
    ]


def draft() -> DiagnosisDraft:
    """The agent's draft: every number and citation grounded in records()."""
    return DiagnosisDraft.model_validate({
        "conclusion": {"text": "checkout-api ran out of database connections: HikariPool-1 had all 20 connections "
                               "active with requests waiting, so requests timed out after 30000ms.",
                       "based_on_analysis_ids": ["a1", "a2"]},
        "analysis": [
            {"analysis_id": "a1", "kind": "NORMAL", "tool_call_ids": ["call_logs"],
             "text": "checkout-api logged 42 HikariPool-1 timeouts: connection requests timed out after 30000ms."},
            {"analysis_id": "a2", "kind": "NORMAL", "tool_call_ids": ["call_pool"],
             "text": "The pool had 20 of 20 connections active, 0 idle and 14 requests waiting."},
            {"analysis_id": "a3", "kind": "NORMAL", "tool_call_ids": ["call_kb"],
             "text": "The runbook says to look for long transactions or leaked connections before raising "
                     "maximumPoolSize."},
            {"analysis_id": "a4", "kind": "NEGATIVE_OBSERVATION", "tool_call_ids": ["call_oom"],
             "text": "No OutOfMemoryError lines matched for checkout-api in the same window."},
        ],
        "action_plan": [{"action": "Look for long-running transactions holding checkout-api's connections.",
                         "based_on_analysis_ids": ["a2", "a3"]},
                        {"action": "Raise maximumPoolSize of checkout-api only if no leak is found.",
                         "based_on_analysis_ids": ["a3"]}],
        "recommendations": [{"text": "Alert on HikariPool-1 waiting requests before users see timeouts.",
                             "based_on_analysis_ids": ["a1", "a2"]}],
        "limitations": {"scope": "checkout-api logs and pool samples, 22:30-23:30 UTC; the runbook",
                        "missing_info": ["database server metrics"]},
    })


async def outcome_with(verdict: SemanticVerdict | None, *, failure: str | None = None) -> ReleaseOutcome:
    """Run the real release pipeline over records() with a fixed verdict (or a FAILURE cause)."""
    store = InMemoryCanonicalStore()
    for record in records():
        await store.put(record)
    judge = FixedJudge(verdict=verdict) if verdict is not None else FixedJudge()
    release = DiagnosisRelease(EvidenceGuard(store, load_rules()), ScriptedRepairer(), judge, store)
    ctx = RunContext(run_id=RUN, session_key="T:C:1", query=QUESTION, timeline=RunTimeline(RUN, InMemoryTimelineStore()))
    if failure is not None:
        return await release.failure(ctx, failure)
    return await release.release(ctx, draft())


def progress_page() -> str:
    """The streamed plan while the run is in its independent review."""
    state = ProgressState()
    updates = [ProgressUpdate(stage=ProgressStage.ROUTING), ProgressUpdate(stage=ProgressStage.PLANNING, step=1)]
    for record in records():
        projection = record.projection or {}
        tool = ToolProgress(tool_call_id=record.tool_call_id, tool=record.tool_name,
                            subject=spec_for(record.tool_name).subject(record.effective_arguments, projection),
                            evidence_status=EvidenceStatus(projection["evidence_status"]), count=projection["count"])
        updates.append(ProgressUpdate(stage=ProgressStage.TOOL_FINISHED, tool=tool))
    updates += [ProgressUpdate(stage=ProgressStage.EVIDENCE_CHECK), ProgressUpdate(stage=ProgressStage.REVIEW)]
    for update in updates:
        state.apply(RUN, update)
    return page(plan_html(state.stage, [t.chunk() for t in state.tasks.values()]))


async def pages() -> dict[str, str]:
    """kind -> HTML page."""
    report = await outcome_with(None)
    if report.outcome is not Outcome.SUCCESS or report.report is None:
        raise SystemExit(f"the preview draft did not verify: {report.fallback}")
    unsupported = SemanticVerdict(verdict=SemanticVerdictKind.UNSUPPORTED,
                                  reason='the rows show "waiting" requests, but no result shows what holds the connections')
    fallback = await outcome_with(unsupported)
    failure = await outcome_with(None, failure="model_unavailable")
    evidence: list[dict[str, Any]] = fit_blocks(evidence_view(report.report, 1), run_id=None)
    return {
        "report": blocks_page(render_outcome(report, 14.2).blocks),
        "fallback": blocks_page(render_outcome(fallback, 16.8).blocks),
        "failure": blocks_page(render_outcome(failure, 3.1).blocks),
        "progress": progress_page(),
        "evidence": blocks_page(evidence, ephemeral=True),
    }


def screenshot(chromium: str, html_file: Path, png: Path) -> None:
    """Measure the page (its title holds its height), then screenshot it at that height."""
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
             "--hide-scrollbars"]
    url = html_file.resolve().as_uri()
    dom = subprocess.run([chromium, *flags, "--dump-dom", url], capture_output=True, text=True, timeout=120).stdout
    height = int(dom.split("<title>", 1)[1].split("</title>", 1)[0]) if "<title>" in dom else 1600
    subprocess.run([chromium, *flags, f"--window-size={WIDTH},{height + 8}", f"--screenshot={png.resolve()}", url],
                   capture_output=True, timeout=120, check=True)


def main() -> int:
    """Write docs/preview/<kind>.html and, with Chromium, <kind>.png."""
    OUT.mkdir(parents=True, exist_ok=True)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    for kind, html_text in asyncio.run(pages()).items():
        html_file = OUT / f"{kind}.html"
        html_file.write_text(html_text, encoding="utf-8")
        if chromium:
            screenshot(chromium, html_file, OUT / f"{kind}.png")
        print(f"{kind}: {html_file}" + (f" + {kind}.png" if chromium else " (no chromium: HTML only)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
