"""Recordings of a *summariser*: a model that makes no tool call of its own and only cites and restates what it was
shown — the best a very small local model does. `python eval/agent/make_summariser_recordings.py` (from the
repository root, after make_incidents.py) writes, per incident:

- `recordings/summariser-first-look.json` (first look on): it cites the first look's ERROR lines of the first named
  service (quoting the first line shown) and, when the first look read a deployments / changes table, its latest
  row; it states no conclusion;
- `recordings/summariser-no-first-look.json` (first look off): with nothing shown it can only answer in prose, twice.

The first look is deterministic, so `{{look:N}}` in these recordings names the same calls at every replay. Together
they show, deterministically, what the first look is for; the live models' recordings measure it.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from core.bootstrap import build_services, first_look  # noqa: E402 - the repository root is on the path only now
from core.run import RunContext  # noqa: E402
from core.settings import Settings  # noqa: E402
from entrypoints.eval_agent import incident_settings  # noqa: E402
from entrypoints.eval_agent_suite import Incident, Recording, load_suite, write_recording  # noqa: E402

ROUTER = {"content": '{"intent": "DIAGNOSIS"}'}
REVIEW = {"content": '{"verdict": "SUPPORTED", "reason": "each analysis restates the evidence it cites"}'}
PROSE = {"content": "The service seems to have problems; I would check its logs."}


async def first_look_calls(incident: Incident, folder: Path) -> list[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    """The first look's calls for the incident, made by the real services (no model involved)."""
    settings = incident_settings(Settings(redis_url=None), incident, folder, first_look=True)
    services = await build_services(settings)
    try:
        look = first_look(settings, services.boundary)
        assert look is not None
        ctx = RunContext(run_id=f"run_{incident.name}", session_key="gen", query=incident.spec.question,
                         timeline=services.timeline_for(f"run_{incident.name}"))
        return list(await look.run(ctx))
    finally:
        await services.aclose()


def summary_draft(calls: list[tuple[str, str, dict[str, Any], dict[str, Any]]]) -> dict[str, Any] | None:
    """The summariser's draft: the first ERROR lines shown and the latest change row, restated; None if nothing."""
    analyses = []
    for n, (_, tool, arguments, projection) in enumerate(calls, start=1):
        if tool == "query_logs" and arguments.get("query") == "*" and projection.get("logs") and not analyses:
            line = projection["logs"][0]
            analyses.append({"text": f"{line['service']} logs '{line['message']}' at {line['level']} level.", "n": n})
        if tool == "query_mysql" and "SELECT" in arguments.get("sql", "") and projection.get("rows"):
            analyses.append({"text": "The latest change recorded in the database is: "
                                     + ", ".join(str(v) for v in projection["rows"][0][1:4]) + ".", "n": n})
            break
    if not analyses:
        return None
    return {"conclusion": None,
            "analysis": [{"analysis_id": f"a{i}", "kind": "NORMAL", "text": a["text"],
                          "tool_call_ids": [f"{{{{look:{a['n']}}}}}"]} for i, a in enumerate(analyses, start=1)],
            "action_plan": [], "recommendations": [],
            "limitations": {"scope": "The bot's first look only.", "missing_info": ["No further query was made."]}}


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for incident in load_suite(HERE):
            draft = summary_draft(await first_look_calls(incident, Path(tmp)))
            with_look = [ROUTER, PROSE, PROSE] if draft is None else [
                ROUTER, {"tool_calls": [{"id": "call_sum", "name": "submit_diagnosis_draft", "arguments": draft}]}, REVIEW]
            folder = incident.folder / "recordings"
            write_recording(folder / "summariser-first-look.json", Recording(
                model="summariser", server="generated: cites only what it was shown", first_look=True,
                responses=with_look))
            write_recording(folder / "summariser-no-first-look.json", Recording(
                model="summariser", server="generated: cites only what it was shown", first_look=False,
                responses=[ROUTER, PROSE, PROSE]))
    print(json.dumps({"written": "summariser recordings"}))


if __name__ == "__main__":
    asyncio.run(main())
