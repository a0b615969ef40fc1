"""`diagbot eval-agent` on recordings: the suite replays deterministically through the real tools, guards and
release, prints the table per model, and fails when a recording publishes a wrong cause."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from entrypoints.eval_agent import run_eval_agent
from entrypoints.eval_agent_suite import load_suite
from tests.paths import REPO_ROOT

SUITE = REPO_ROOT / "eval" / "agent"
CATEGORIES = {"connection_pool", "deploy_regression", "memory", "disk", "dependency_timeout", "none", "recovered"}


def test_the_suite_has_the_incidents_the_issue_asks_for() -> None:
    """At least 12 incidents, covering pool, deploy, memory, disk, dependency timeout, healthy, recovered and a red
    herring; each with its data, key facts or an explicit 'none', and a reference recording."""
    incidents = load_suite(SUITE)
    assert len(incidents) >= 12
    assert {i.spec.category for i in incidents} >= CATEGORIES
    assert any("red_herring" in i.name for i in incidents)
    for incident in incidents:
        assert (incident.folder / "logs").is_dir()
        assert (incident.folder / "db.sql").is_file()
        assert incident.spec.must_not_claim
        assert incident.spec.key_facts or incident.spec.category == "none"
        assert "reference" in incident.recordings()


async def test_recorded_suite_replays_as_recorded_and_prints_the_table() -> None:
    """Every recording scores what it scored when recorded, nothing wrong is published, the table has a row per model."""
    lines: list[str] = []
    code = await run_eval_agent(SUITE, out=lines.append)
    text = "\n".join(lines)
    assert code == 0, text
    assert "| model | first look | incidents | correct | wrong published |" in text
    reference = next(line for line in lines if line.startswith("| reference |"))
    cells = [c.strip() for c in reference.strip("|").split("|")]
    assert cells[3] == cells[2]  # the reference answers are all correct
    assert cells[4] == "0"
    assert "guards: evidence=ok semantic=SUPPORTED" in text


@pytest.fixture
def herring(tmp_path: Path) -> Path:
    """A copy of the red-herring incident."""
    folder = tmp_path / "06_red_herring"
    shutil.copytree(SUITE / "06_red_herring", folder)
    return folder


def wrong_cause() -> dict[str, object]:
    """A model that follows the loud disk warning and publishes it as the cause; the guards cannot know the cause
    is wrong (the evidence is real and the reviewer is recorded as agreeing)."""
    warn = "Disk usage of /data is 81%"
    draft = {"conclusion": {"text": "checkout-api errors are caused by order-service's disk filling up.",
                            "based_on_analysis_ids": ["a1"]},
             "analysis": [{"analysis_id": "a1", "kind": "NORMAL", "tool_call_ids": ["{{call:1}}"],
                           "text": f"order-service logs '{warn}' at WARN level."}],
             "action_plan": [], "recommendations": [],
             "limitations": {"scope": "order-service WARN logs in the last hour.", "missing_info": []}}
    return {"model": "herring-follower", "first_look": False, "responses": [
        {"content": '{"intent": "DIAGNOSIS"}'},
        {"tool_calls": [{"id": "c1", "name": "query_logs",
                         "arguments": {"service": "order-service", "query": "Disk usage", "level": "WARN"}}]},
        {"tool_calls": [{"id": "s1", "name": "submit_diagnosis_draft", "arguments": draft}]},
        {"content": '{"verdict": "SUPPORTED", "reason": "the warning is quoted"}'},
    ]}


async def test_a_recording_that_publishes_a_wrong_cause_fails_the_suite(herring: Path) -> None:
    """The wrong cause is published (the pipeline cannot know it is wrong), so the suite exits 1 and the table counts
    one wrong published for that model."""
    (herring / "recordings" / "herring.json").write_text(json.dumps(wrong_cause()))
    lines: list[str] = []
    code = await run_eval_agent(herring.parent, out=lines.append)
    assert code == 1
    row = next(line for line in lines if line.startswith("| herring-follower |"))
    assert [c.strip() for c in row.strip("|").split("|")][4] == "1"
    assert any("WRONG_PUBLISHED (claims 'disk')" in line for line in lines)
    assert any(line.startswith("FAILED: 1 run(s) published a wrong cause") for line in lines)


async def test_a_recording_that_no_longer_fits_the_run_fails_the_suite(herring: Path) -> None:
    """A recording whose score changed (here: its expected score says correct, it now abstains) is a failure, so a
    pipeline change that alters a model's outcome is seen."""
    recording = json.loads((herring / "recordings" / "reference.json").read_text())
    recording["responses"][2]["tool_calls"][0]["arguments"]["analysis"][0]["tool_call_ids"] = ["call_made_up"]
    (herring / "recordings" / "reference.json").write_text(json.dumps(recording))
    lines: list[str] = []
    code = await run_eval_agent(herring.parent, out=lines.append)
    assert code == 1
    assert any("PROBLEM: recorded as correct, now abstained" in line for line in lines)


async def test_a_live_run_is_recorded_and_its_recording_replays_as_it_ran(tmp_path: Path) -> None:
    """--live --record against a llama-cpp-python-like server writing <tool_call> text: the run reaches the guards,
    its answers are kept with tool call ids as placeholders, and replaying them scores the same, deterministically."""
    from core.settings import Settings
    from testkit.openai_server import FakeOpenAIServer
    from tests.fakes.llama_cpp_endpoint import GGUF_TEMPLATE, llama_cpp

    folder = tmp_path / "01_connection_pool"
    shutil.copytree(SUITE / "01_connection_pool", folder)
    async with FakeOpenAIServer(models=["small"]) as server:
        server.push(*[llama_cpp(GGUF_TEMPLATE)] * 12)
        live = Settings(openai_base_url=server.base_url, openai_api_key="k", diag_model="small", redis_url=None)
        lines: list[str] = []
        code = await run_eval_agent(tmp_path, live=True, settings=live, out=lines.append, record="small-live",
                                    server_label="fake llama-cpp, GGUF template")
    row = next(line for line in lines if line.startswith("01_connection_pool"))
    assert "text_calls=" in row
    assert "guards: evidence=" in row
    recording = json.loads((folder / "recordings" / "small-live.json").read_text())
    assert recording["server"] == "fake llama-cpp, GGUF template"
    assert recording["first_look"] is True
    assert "{{call:1}}" in json.dumps(recording["responses"]) or "{{look:" in json.dumps(recording["responses"])
    replayed: list[str] = []
    assert await run_eval_agent(tmp_path, out=replayed.append, only="small-live") == code
    assert not any("PROBLEM" in line for line in replayed)
