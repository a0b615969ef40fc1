"""`diagbot eval-agent SUITE [--live]`: incidents with known root causes through the whole pipeline (SPEC §13).

By default every recording of every incident is replayed: its model answers are served by the local
OpenAI-compatible server (as in the demo) while the tools, both guards and release run for real on the incident's
data; the run is deterministic and fails (exit 1) when a recording publishes a wrong cause or no longer scores what
it scored when recorded. With `--live` the configured endpoint answers instead (`--record NAME` keeps its answers
as recordings/NAME.json for CI). Prints one row per run — score, the guards' verdict on the draft, tool and model
calls, wall time — and a table per model.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.bootstrap import build_services
from core.contracts.run import EventType, SessionKey, TimelineEvent, Turn
from core.llm.model import ModelReply
from core.ports import ChatModel
from core.settings import DEMO_DATA, Settings
from entrypoints.demo import RecordedScript, call_ids_in, look_ids_in
from entrypoints.eval_agent_suite import Incident, Recording, Score, load_suite, score, write_recording
from testkit.openai_server import FakeOpenAIServer

Print = Callable[[str], None]
RECORDED_MODEL = "recorded-model"
CITATION_CODES = frozenset({"INVOCATION_MISSING", "INVOCATION_ID_MISMATCH", "INVOCATION_NOT_REFERENCABLE",
                            "EVIDENCE_KIND_MISMATCH", "TOOL_REFERENCE_MISSING", "ANALYSIS_REFERENCE_MISSING",
                            "ANALYSIS_REFERENCE_UNKNOWN"})


@dataclass
class RunRow:
    """One incident run by one model."""

    incident: str
    model: str
    first_look: bool
    score: Score
    reason: str
    guard: str
    drafts: int = 0
    citations_valid: int = 0
    tool_calls: int = 0
    model_calls: int = 0
    text_calls: int = 0
    wall_s: float = 0.0
    problems: list[str] = field(default_factory=list)


def incident_settings(base: Settings, incident: Incident, folder: Path, *, first_look: bool) -> Settings:
    """The base settings pointed at the incident's data, clock and a fresh database."""
    run_folder = Path(tempfile.mkdtemp(prefix=f"{incident.name}-", dir=folder))
    db = run_folder / "backend.db"
    with sqlite3.connect(db) as conn:
        conn.executescript((incident.folder / "db.sql").read_text(encoding="utf-8"))
    knowledge = incident.folder / "knowledge"
    update: dict[str, Any] = {
        "diag_logs_path": incident.folder / "logs", "diag_sql_url": f"sqlite:///{db}",
        "diag_knowledge_path": knowledge if knowledge.is_dir() else DEMO_DATA / "knowledge",
        "diag_clock": datetime.fromisoformat(incident.spec.clock.replace("Z", "+00:00")),
        "database_url": f"sqlite+aiosqlite:///{run_folder}/runs.db", "redis_url": None,
    }
    if "diag_first_look" in Settings.model_fields:
        update["diag_first_look"] = first_look
    metrics = incident.folder / "metrics"
    if metrics.is_dir() and "diag_metrics_path" in Settings.model_fields:
        update["diag_metrics_path"] = metrics
    return base.model_copy(update=update)


def guard_verdict(events: Sequence[TimelineEvent]) -> tuple[str, int, int]:
    """The guards' verdict on the run's drafts in words, drafts checked, drafts whose citations were all valid."""
    parts, drafts, valid = [], 0, 0
    for event in events:
        summary = event.summary
        if event.type in (EventType.EVIDENCE_GUARD_INITIAL, EventType.EVIDENCE_GUARD_RECHECK):
            drafts += 1
            codes = list(summary.get("violation_codes") or [])
            valid += not CITATION_CODES.intersection(codes)
            stage = "evidence" if event.type is EventType.EVIDENCE_GUARD_INITIAL else "recheck"
            parts.append(f"{stage}=" + ("ok" if summary.get("valid") else "+".join(codes) or "invalid"))
        elif event.type is EventType.EVIDENCE_REPAIR:
            parts.append("repair=" + ("done" if summary.get("repaired") else "none"))
        elif event.type is EventType.SEMANTIC_GUARD:
            parts.append(f"semantic={summary.get('verdict')}")
    return (" ".join(parts) or "no draft"), drafts, valid


class RecordingChatModel:
    """A ChatModel wrapper keeping every answer in the recording format, tool call ids as {{call:N}}."""

    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner
        self.responses: list[dict[str, Any]] = []

    async def complete(self, *, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
                       timeout_s: float = 60.0) -> ModelReply:
        reply = await self.inner.complete(model=model, messages=messages, tools=tools, timeout_s=timeout_s)
        request = {"messages": messages}
        self.responses.append(recorded_entry(reply, call_ids_in(request), look_ids_in(request)))
        return reply


def recorded_entry(reply: ModelReply, ids: list[str], looks: Sequence[str] = ()) -> dict[str, Any]:
    """A reply as a recorded response whose mentions of the request's tool call ids are placeholders."""
    entry: dict[str, Any] = {"content": reply.content}
    if reply.tool_calls:
        calls = []
        for call in reply.tool_calls:
            try:
                arguments: Any = json.loads(call.arguments) if call.arguments.strip() else {}
            except ValueError:
                arguments = call.arguments
            calls.append({"id": call.id, "name": call.name, "arguments": arguments})
        entry["tool_calls"] = calls
    text = json.dumps(entry, ensure_ascii=False)
    named = [(f"{{{{call:{n}}}}}", i) for n, i in enumerate(ids, start=1)]
    named += [(f"{{{{look:{n}}}}}", i) for n, i in enumerate(looks, start=1)]
    for placeholder, call_id in sorted(named, key=lambda p: -len(p[1])):
        text = text.replace(call_id, placeholder)
    result: dict[str, Any] = json.loads(text)
    return result


async def run_one(settings: Settings, incident: Incident, label: str, first_look: bool,
                  model: ChatModel | None = None) -> RunRow:
    """One incident through the pipeline; the row with its score and counts."""
    services = await build_services(settings, model=model)
    started = time.monotonic()
    try:
        turn = Turn(session=SessionKey(team="eval", channel="eval", thread_ts=incident.name), text=incident.spec.question,
                    user="eval", message_ts=incident.name)
        outcome = await services.chat_service.handle(turn)
        wall = time.monotonic() - started
        events = await services.chat_service.timeline(outcome.run_id)
    finally:
        await services.aclose()
    verdict, drafts, valid = guard_verdict(events)
    result, reason = score(incident.spec, outcome)
    model_calls = [e for e in events if e.type is EventType.MODEL_CALL]
    return RunRow(incident=incident.name, model=label, first_look=first_look, score=result, reason=reason, guard=verdict,
                  drafts=drafts, citations_valid=valid, tool_calls=sum(e.type is EventType.TOOL_CALL for e in events),
                  model_calls=len(model_calls), text_calls=sum(1 for e in model_calls if e.summary.get("calls_from_text")),
                  wall_s=wall)


async def replay_suite(incidents: Sequence[Incident], folder: Path, *, only: str | None = None) -> list[RunRow]:
    """Every recording of every incident, replayed through the local server."""
    rows: list[RunRow] = []
    async with FakeOpenAIServer(models=[RECORDED_MODEL]) as server:
        script = RecordedScript(server)
        base = Settings(openai_base_url=server.base_url, openai_api_key="recorded", diag_model=RECORDED_MODEL,
                        diag_guard_model=None, diag_model_tool_choice=None, diag_max_steps=None,
                        diag_run_deadline_s=None)
        for incident in incidents:
            for name, recording in incident.recordings().items():
                if only and only not in (name, recording.model):
                    continue
                rows.append(await _replay_one(base, incident, recording, script, folder))
    return rows


async def _replay_one(base: Settings, incident: Incident, recording: Recording, script: RecordedScript,
                      folder: Path) -> RunRow:
    settings = incident_settings(base, incident, folder, first_look=recording.first_look)
    script.load(recording.responses)
    row = await run_one(settings, incident, recording.model, recording.first_look)
    if unused := script.unused():
        row.problems.append(f"{unused} recorded responses unused (the recording no longer fits the run)")
    if recording.expect is not None and row.score is not recording.expect:
        row.problems.append(f"recorded as {recording.expect.value}, now {row.score.value}")
    if recording.wall_s is not None:
        row.wall_s = recording.wall_s
    return row


async def live_suite(incidents: Sequence[Incident], folder: Path, settings: Settings, *, record: str | None,
                     first_look: bool, out: Print, server_label: str | None = None) -> list[RunRow]:
    """Every incident against the configured endpoint, one at a time; with `record`, keep the answers."""
    from core.llm.openai_model import OpenAIChatModel

    rows = []
    for incident in incidents:
        key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
        endpoint = OpenAIChatModel(settings.openai_base_url, key, tool_choice=settings.diag_model_tool_choice,
                                   max_tokens=settings.diag_model_max_tokens)
        recorder = RecordingChatModel(endpoint)
        try:
            row = await run_one(incident_settings(settings, incident, folder, first_look=first_look), incident,
                                settings.diag_model or "?", first_look, model=recorder)
        finally:
            await endpoint.aclose()
        out(format_row(row))
        rows.append(row)
        if record:
            write_recording(incident.folder / "recordings" / f"{record}.json", Recording(
                model=settings.diag_model or "?", server=server_label or str(settings.openai_base_url or ""),
                first_look=first_look,
                expect=row.score, wall_s=round(row.wall_s, 1), recorded_at=datetime.now(UTC).isoformat(timespec="seconds"),
                responses=recorder.responses))
    return rows


def format_row(row: RunRow) -> str:
    """One run as a line: incident, model, score and why, the guards' verdict, counts, wall time."""
    look = "first-look" if row.first_look else "no-first-look"
    text = f" text_calls={row.text_calls}" if row.text_calls else ""
    line = (f"{row.incident:<24} {row.model} ({look}): {row.score.value.upper()} ({row.reason}) | guards: {row.guard} | "
            f"tool_calls={row.tool_calls} model_calls={row.model_calls}{text} wall={row.wall_s:.1f}s")
    return line + "".join(f"\n    PROBLEM: {p}" for p in row.problems)


def table(rows: Sequence[RunRow]) -> list[str]:
    """The table per model (and first-look setting)."""
    header = ("| model | first look | incidents | correct | wrong published | incomplete | abstained | citations valid "
              "| tool calls | model calls | wall s / incident |")
    lines = [header, "|" + "---|" * 11]
    groups: dict[tuple[str, bool], list[RunRow]] = {}
    for row in rows:
        groups.setdefault((row.model, row.first_look), []).append(row)
    for (model, first_look), runs in groups.items():
        count = {s: sum(r.score is s for r in runs) for s in Score}
        drafts = sum(r.drafts for r in runs)
        valid = sum(r.citations_valid for r in runs)
        lines.append(
            f"| {model} | {'on' if first_look else 'off'} | {len(runs)} | {count[Score.CORRECT]} | "
            f"{count[Score.WRONG_PUBLISHED]} | {count[Score.INCOMPLETE]} | {count[Score.ABSTAINED]} | "
            f"{valid}/{drafts} drafts | {sum(r.tool_calls for r in runs)} | {sum(r.model_calls for r in runs)} | "
            f"{sum(r.wall_s for r in runs) / len(runs):.1f} |")
    return lines


async def run_eval_agent(suite: Path, *, live: bool = False, settings: Settings | None = None, out: Print = print,
                         record: str | None = None, only: str | None = None, first_look: bool = True,
                         incident_filter: str | None = None, server_label: str | None = None) -> int:
    """The command: 0 when nothing wrong was published (and, replaying, every recording scored as recorded)."""
    incidents = [i for i in load_suite(suite) if not incident_filter or incident_filter in i.name]
    with tempfile.TemporaryDirectory(prefix="diagbot-eval-agent-") as tmp:
        if live:
            live_settings = settings or Settings()
            out(f"diagbot eval-agent --live: {len(incidents)} incidents against {live_settings.diag_model} "
                f"(first look {'on' if first_look else 'off'})")
            rows = await live_suite(incidents, Path(tmp), live_settings, record=record, first_look=first_look, out=out,
                                    server_label=server_label)
        else:
            out(f"diagbot eval-agent: {len(incidents)} incidents, recorded model answers (tools, guards and release "
                "run for real on each incident's data)")
            rows = await replay_suite(incidents, Path(tmp), only=only)
            for row in rows:
                out(format_row(row))
    out("")
    for line in table(rows):
        out(line)
    wrong = [r for r in rows if r.score is Score.WRONG_PUBLISHED]
    problems = [r for r in rows if r.problems]
    if wrong:
        out(f"FAILED: {len(wrong)} run(s) published a wrong cause: " + ", ".join(f"{r.incident} ({r.model})" for r in wrong))
    if problems:
        out(f"FAILED: {len(problems)} recording(s) did not replay as recorded")
    return 1 if wrong or problems else 0
