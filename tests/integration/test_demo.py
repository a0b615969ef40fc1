"""The offline demo: every bundled scenario gives its expected outcome, and the checks can fail."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from core.bootstrap import ModelNotConfigured
from core.settings import DEMO_CLOCK, Settings
from entrypoints.demo import load_scenarios, recorded_reply, run_demo, substitute
from testkit.openai_server import FakeOpenAIServer
from tests.paths import REPO_ROOT


def test_diagbot_demo_runs_every_scenario_offline_and_exits_zero() -> None:
    """`diagbot demo` says responses are recorded, runs all scenarios to their expected outcome and exits 0."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "DIAG_", "REDIS_", "DATABASE_"))}
    done = subprocess.run([str(Path(sys.executable).parent / "diagbot"), "demo"], capture_output=True, text=True, timeout=60,
                          env=env, cwd=REPO_ROOT, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "RECORDED" in done.stdout.splitlines()[0]
    assert f"OK: all {len(load_scenarios())} scenarios" in done.stdout
    for outcome in ("SUCCESS", "SAFE_FALLBACK (SEMANTIC_UNSUPPORTED)", "[KNOWLEDGE] SUCCESS", "NEGATIVE_OBSERVATION"):
        assert outcome in done.stdout
    assert "EVIDENCE_REPAIR" in done.stdout
    assert "RUN_FINISHED" in done.stdout


def test_bundled_scenarios_cover_the_required_paths() -> None:
    """The bundled scenarios include success, repair, unsupported fallback, knowledge and a same-thread follow-up."""
    scenarios = load_scenarios()
    assert len(scenarios) >= 5
    threads = [s.thread for s in scenarios]
    assert len(threads) > len(set(threads)), "a follow-up must share a thread with an earlier scenario"
    assert any(s.expect.fallback_type and s.expect.fallback_type.value == "SEMANTIC_UNSUPPORTED" for s in scenarios)
    assert any(s.expect.request_contains for s in scenarios)


async def test_a_scenario_with_the_wrong_expectation_fails_the_demo() -> None:
    """When a scenario's outcome differs from its expectation the demo reports the mismatch and returns 1."""
    scenario = load_scenarios()[2].model_copy(deep=True)
    scenario.expect.fallback_type = None
    lines: list[str] = []
    assert await run_demo(scenarios=[scenario], out=lines.append) == 1
    assert any("MISMATCH" in line for line in lines)


async def test_unused_recorded_responses_fail_the_scenario() -> None:
    """A recording with more replies than the run asked for is reported, not silently carried to the next scenario."""
    scenario = load_scenarios()[0].model_copy(deep=True)
    scenario.responses.append({"content": "never requested"})
    lines: list[str] = []
    assert await run_demo(scenarios=[scenario], out=lines.append) == 1
    assert any("1 recorded responses unused" in line for line in lines)


async def test_live_demo_asks_the_configured_endpoint_without_checks(tmp_path: Path) -> None:
    """`demo --live` sends the bundled questions to the configured endpoint and prints whatever it answers."""
    scenarios = load_scenarios()[:2]
    async with FakeOpenAIServer([{"content": json.dumps({"intent": "CHAT"})}] * len(scenarios)) as server:
        settings = Settings(openai_base_url=server.base_url, openai_api_key="k", diag_model="live-model")
        lines: list[str] = []
        assert await run_demo(live=True, settings=settings, scenarios=scenarios, out=lines.append) == 0
        assert server.remaining == 0
        assert server.requests[0]["model"] == "live-model"
    assert "--live" in lines[0]
    assert sum("[CHAT] SUCCESS" in line for line in lines) == len(scenarios)


async def test_live_demo_without_model_configuration_raises_the_hint() -> None:
    """`demo --live` with nothing configured stops with the configuration hint, not a run of failures."""
    with pytest.raises(ModelNotConfigured):
        await run_demo(live=True, settings=Settings(), scenarios=load_scenarios()[:1], out=lambda _: None)


def test_placeholders_bind_to_the_requests_tool_results() -> None:
    """{{call:N}} and {{doc:N}} resolve to the N-th tool result's id and first document of the request."""
    request = {"messages": [
        {"role": "system", "content": "# Knowledge Answer"},
        {"role": "tool", "tool_call_id": "wire_1",
         "content": json.dumps({"tool_call_id": "call_a", "evidence_blocks": [{"doc": "runbooks/x.md"}]})},
        {"role": "tool", "tool_call_id": "call_b", "content": "not json"},
    ]}
    recorded = {"ids": ["{{call:1}}", "{{call:2}}"], "doc": "{{doc:1}}"}
    reply = recorded_reply({"tool_calls": [{"name": "f", "arguments": recorded}]})
    arguments = reply(request)["tool_calls"][0]["arguments"]
    assert arguments == {"ids": ["call_a", "call_b"], "doc": "runbooks/x.md"}


def test_placeholders_in_a_repair_request_bind_to_the_referencable_calls() -> None:
    """A request without tool results (evidence repair) binds {{call:N}} to the ids named in its input."""
    payload = {"draft": {"analysis": [{"tool_call_ids": ["call_fake"]}]},
               "referencable_calls": [{"tool_call_id": "call_real", "tool_name": "query_logs"}]}
    request = {"messages": [{"role": "system", "content": "# Evidence Repair"}, {"role": "user", "content": json.dumps(payload)}]}
    assert recorded_reply({"content": "{{call:1}}"})(request)["content"] == "call_real"


def test_a_placeholder_beyond_the_calls_answers_an_http_error() -> None:
    """A recording naming a call the run never made answers HTTP 400 with the reason, not a broken connection."""
    answer = recorded_reply({"content": "{{call:3}}"})({"messages": []})
    assert answer["status"] == 400
    assert "call 3" in answer["body"]["error"]["message"]
    assert substitute("plain", []) == "plain"


def test_demo_clock_matches_the_data_generator() -> None:
    """The demo pins the same clock the demo data was generated around."""
    spec = importlib.util.spec_from_file_location("demo_generate", REPO_ROOT / "demo" / "generate.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert datetime.fromisoformat(module.DEMO_CLOCK.replace("Z", "+00:00")) == DEMO_CLOCK
