"""The agent eval suite's format and scoring (`diagbot eval-agent SUITE`, SPEC §13).

A suite is a folder with one folder per incident (eval/agent/make_incidents.py writes ours):

- `incident.json`: `question`, `clock` (ISO-8601, pins "now"), `category` (the expected root-cause category, `none`
  for a healthy system), `key_facts` (groups of alternatives, case-insensitive; a correct report matches one
  alternative of every group), `must_not_claim` (phrases a report must not contain), optional `explain`;
- `logs/` (JSON-lines, the embedded log backend), `db.sql` (SQLite statements loaded into a fresh database per
  run), optional `knowledge/` (runbooks; the bundled ones otherwise) and `metrics/` (OpenMetrics files);
- `recordings/<name>.json`: recorded model answers `{model, server, first_look, expect, wall_s, responses}`, served
  in order by the local OpenAI-compatible server, `{{call:N}}` standing for the N-th tool call's id (demo format).

Scoring reads only what was published. *Wrong published* (the worst outcome: a confident wrong answer in the incident
channel): the report's claims (conclusion, actions, recommendations) contain a must-not fact, or it states a
conclusion without the key facts. *Correct*: every key-fact group is shown (anywhere in the report) and the cause is
concluded (for a healthy system, nothing is concluded wrongly). *Incomplete*: published, nothing wrong, but the cause is
not shown or not concluded. Any other outcome (safe fallback, failure) is *abstained*. Analyses are observations the
guards verified against the evidence, so a must-not fact there (a loud warning quoted as what it is) is not a claim.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from core.contracts.release import Outcome, ReleaseOutcome


class Score(StrEnum):
    CORRECT = "correct"
    WRONG_PUBLISHED = "wrong_published"
    INCOMPLETE = "incomplete"
    ABSTAINED = "abstained"


class IncidentSpec(BaseModel):
    """incident.json."""

    question: str
    clock: str
    category: str
    key_facts: list[list[str]] = Field(default_factory=list)
    must_not_claim: list[str] = Field(default_factory=list)
    explain: str = ""


class Recording(BaseModel):
    """recordings/<name>.json: one model's answers for one incident."""

    model: str
    server: str = ""
    first_look: bool = True
    expect: Score | None = Field(default=None, description="The score this recording had when it was recorded.")
    wall_s: float | None = Field(default=None, description="Wall time of the live run it was recorded from.")
    recorded_at: str = ""
    responses: list[dict[str, Any]]


class Incident(BaseModel):
    """One incident folder."""

    name: str
    folder: Path
    spec: IncidentSpec

    def recordings(self) -> dict[str, Recording]:
        """Every recording of the incident by file stem."""
        folder = self.folder / "recordings"
        return {p.stem: Recording.model_validate_json(p.read_text(encoding="utf-8"))
                for p in sorted(folder.glob("*.json"))} if folder.is_dir() else {}


def load_suite(folder: Path) -> list[Incident]:
    """Every incident folder of the suite (one holding incident.json), in name order."""
    if (folder / "incident.json").is_file():
        paths = [folder]
    else:
        paths = sorted(p for p in folder.iterdir() if (p / "incident.json").is_file())
    if not paths:
        raise ValueError(f"{folder}: no incident folders (each needs an incident.json)")
    return [Incident(name=p.name, folder=p, spec=IncidentSpec.model_validate_json((p / "incident.json").read_text()))
            for p in paths]


def published_text(outcome: ReleaseOutcome, *, claims_only: bool = False) -> str:
    """What a published report says, lowercased: its claims (conclusion, actions, recommendations) and, unless
    claims_only, its analyses (observations the guards verified against the evidence)."""
    if outcome.report is None:
        return ""
    draft = outcome.report.draft
    parts = [draft.conclusion.text if draft.conclusion else ""]
    parts += [a.action for a in draft.action_plan] + [r.text for r in draft.recommendations]
    if not claims_only:
        parts += [a.text for a in draft.analysis]
    return "\n".join(parts).lower()


def score(spec: IncidentSpec, outcome: ReleaseOutcome) -> tuple[Score, str]:
    """The score of one run's outcome and a short reason."""
    if outcome.outcome is not Outcome.SUCCESS or outcome.report is None:
        return Score.ABSTAINED, outcome.fallback_type.value if outcome.fallback_type else outcome.outcome.value
    claims, text = published_text(outcome, claims_only=True), published_text(outcome)
    claimed = [phrase for phrase in spec.must_not_claim if phrase.lower() in claims]
    if claimed:
        return Score.WRONG_PUBLISHED, "claims " + ", ".join(repr(c) for c in claimed)
    missing = [group for group in spec.key_facts if not any(alt.lower() in text for alt in group)]
    concluded = outcome.report.draft.conclusion is not None
    if concluded and missing:
        return Score.WRONG_PUBLISHED, "concludes without " + ", ".join(repr(g[0]) for g in missing)
    if not missing and (concluded or not spec.key_facts):
        return Score.CORRECT, "shows " + (", ".join(g[0] for g in spec.key_facts) or "no cause, as expected")
    if missing:
        return Score.INCOMPLETE, "published observations without " + ", ".join(repr(g[0]) for g in missing)
    return Score.INCOMPLETE, "published the evidence of the cause without concluding it"


def write_recording(path: Path, recording: Recording) -> None:
    """Write a recording, one response per line block (readable diffs)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(recording.model_dump(mode="json", exclude_none=True), indent=1, ensure_ascii=False) + "\n",
                    encoding="utf-8")
