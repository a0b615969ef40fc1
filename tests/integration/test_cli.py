"""The `diagbot` console script, run as a subprocess like an operator would."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from core.contracts.feedback import Feedback, Vote
from core.stores.sql.db import Database
from core.stores.sql.feedback import SqlFeedbackStore
from core.stores.sql.migrate import upgrade
from entrypoints.cli import main
from testkit.openai_server import FakeOpenAIServer
from tests.paths import REPO_ROOT

DIAGBOT = str(Path(sys.executable).parent / "diagbot")


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The parent environment without model/store settings, plus a temp database and the demo clock."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "DIAG_", "REDIS_", "DATABASE_"))}
    env.update(DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path}/cli.db", DIAG_CLOCK="2026-11-29T23:30:00Z", **extra)
    return env


async def diagbot(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    """Run diagbot without blocking the event loop (a fake server may be serving in it)."""
    proc = await asyncio.create_subprocess_exec(DIAGBOT, *args, env=env, cwd=REPO_ROOT,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


@pytest.fixture
async def server() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as fake:
        yield fake


async def test_tool_prints_found_projection(tmp_path: Path) -> None:
    """`diagbot tool query_logs --service order-service --query HikariPool --level ERROR` prints a FOUND projection."""
    code, out, _ = await diagbot(clean_env(tmp_path), "tool", "query_logs", "--service", "order-service",
                                 "--query", "HikariPool", "--level", "ERROR", "--limit", "3")
    assert code == 0
    projection = json.loads(out)
    assert projection["evidence_status"] == "EVIDENCE_FOUND"
    assert projection["tool_name"] == "query_logs"
    assert 0 < len(projection["logs"]) <= 3


async def test_ask_then_trace_shows_the_runs_timeline(tmp_path: Path, server: FakeOpenAIServer) -> None:
    """`diagbot ask` against an OpenAI-compatible endpoint prints the outcome; `diagbot trace` prints its timeline."""
    env = clean_env(tmp_path, OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="test", DIAG_MODEL="test-model")
    server.push({"content": json.dumps({"intent": "DIAGNOSIS"})},
                {"tool_calls": [{"id": "c1", "name": "query_logs",
                                 "arguments": {"service": "notification-service", "query": "timeout"}}]},
                {"tool_calls": [{"id": "c2", "name": "submit_diagnosis_draft", "arguments": {
                    "analysis": [{"analysis_id": "a1", "kind": "NEGATIVE_OBSERVATION", "tool_call_ids": ["c1"],
                                  "text": "The query for 'timeout' in notification-service matched no lines."}],
                    "limitations": {"scope": "notification-service logs", "missing_info": ["other keywords"]}}}]},
                {"content": json.dumps({"verdict": "SUPPORTED", "reason": "only says the query matched nothing"})})
    code, out, err = await diagbot(env, "ask", "is notification-service timing out?", "--thread", "th-1")
    assert code == 0, err
    assert "[DIAGNOSIS] SUCCESS" in out
    assert "NEGATIVE_OBSERVATION" in out
    match = re.search(r"run id: (run_[0-9a-f]+)", out)
    assert match is not None
    code, out, err = await diagbot(env, "trace", match.group(1))
    assert code == 0, err
    types = re.findall(r"\b(RUN_STARTED|INTENT_ROUTED|TOOL_CALL|FIRST_LOOK|SEMANTIC_GUARD|RUN_FINISHED)\b", out)
    steps = [t for i, t in enumerate(types) if i == 0 or types[i - 1] != t]  # the first look makes several calls
    assert steps == ["RUN_STARTED", "INTENT_ROUTED", "TOOL_CALL", "FIRST_LOOK", "TOOL_CALL", "SEMANTIC_GUARD",
                     "RUN_FINISHED"]
    assert "# Diagnosis Agent" not in out


# In-process runs of the same entry point (main) for the error paths: each subprocess costs seconds of imports.


@pytest.fixture
def cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A temp database and the demo clock for in-process main() calls."""
    monkeypatch.setenv("DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path}/cli.db")
    monkeypatch.setenv("DIAG_CLOCK", "2026-11-29T23:30:00Z")


@pytest.mark.usefixtures("cli_env")
@pytest.mark.parametrize("args", [
    ["--service", "order-service", "--query", "x", "--limit", "many"],
    ["--service", "order-service"],
    ["--service", "order-service", "--query", "x", "--colour", "red"],
    ["--service", "order-service", "--query", "x", "--level=LOUD"],
])
def test_tool_with_bad_arguments_prints_error_projection_and_exits_1(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Invalid values, a missing required argument or an unknown option give the ERROR projection and exit 1."""
    assert main(["tool", "query_logs", *args]) == 1
    projection = json.loads(capsys.readouterr().out)
    assert projection["evidence_status"] == "ERROR"
    assert projection["error"]["code"] == "INVALID_ARGUMENTS"


@pytest.mark.usefixtures("cli_env")
def test_tool_refuses_writes_through_query_mysql(capsys: pytest.CaptureFixture[str]) -> None:
    """A write statement is refused by the read-only policy: ERROR projection, exit 1."""
    assert main(["tool", "query_mysql", "--sql", "DELETE FROM orders"]) == 1
    assert json.loads(capsys.readouterr().out)["evidence_status"] == "ERROR"


@pytest.mark.usefixtures("cli_env")
def test_unknown_tool_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown tool name exits 2 with the list of tools."""
    with pytest.raises(SystemExit) as exited:
        main(["tool", "drop_tables", "--x", "1"])
    assert exited.value.code == 2
    assert "query_logs" in capsys.readouterr().err


@pytest.mark.usefixtures("cli_env")
def test_ask_without_model_configuration_says_what_to_set(capsys: pytest.CaptureFixture[str]) -> None:
    """`diagbot ask` with no model configured prints what to set and exits 2, without a traceback."""
    assert main(["ask", "why is order-service failing?"]) == 2
    err = capsys.readouterr().err
    assert "OPENAI_BASE_URL" in err
    assert "DIAG_MODEL" in err


@pytest.mark.usefixtures("cli_env")
def test_trace_of_an_unknown_run_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    """Tracing a run id that does not exist says so and exits 1."""
    assert main(["trace", "run_doesnotexist"]) == 1
    assert "no run run_doesnotexist" in capsys.readouterr().err




@pytest.mark.usefixtures("cli_env")
def test_serve_without_model_configuration_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    """`diagbot serve` refuses to start a bot that could only fail every run, and says what to set."""
    assert main(["serve"]) == 2
    assert "DIAG_MODEL" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("database_url", "expected"),
    [
        ("postgresql://diag:s3cretpw@127.0.0.1:5999/diag", "database (DATABASE_URL) unavailable"),
        ("postgresql://postgres:s3cretpw@127.0.0.1:5432/no_such_db_for_diagbot", "database (DATABASE_URL) unavailable"),
        ("not a url", "invalid configuration"),
    ],
)
def test_unusable_database_is_one_clear_line_without_secrets(
    database_url: str, expected: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unreachable or missing database, or a malformed URL: exit 2, one line saying which setting, no password."""
    monkeypatch.setenv("DATABASE_URL", database_url)
    assert main(["trace", "run_x"]) == 2
    err = capsys.readouterr().err
    assert expected in err
    assert "Traceback" not in err
    assert "s3cretpw" not in err


@pytest.mark.usefixtures("cli_env")
def test_ask_names_the_one_missing_variable(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """An endpoint without DIAG_MODEL: the message names DIAG_MODEL as the unset variable."""
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert main(["ask", "why?"]) == 2
    err = capsys.readouterr().err
    assert "DIAG_MODEL is unset" in err
    assert "OPENAI_BASE_URL (or" not in err.split(";")[0]  # the endpoint is set: only the model is named missing


@pytest.mark.usefixtures("cli_env")
def test_ask_exits_non_zero_on_failure(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A model endpoint that refuses connections: the turn ends FAILURE, `diagbot ask` exits 1, and the next step
    points at the terminal's trace command (not the Slack one)."""
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("DIAG_MODEL", "m")
    assert main(["ask", "why is order-service failing?"]) == 1
    captured = capsys.readouterr()
    assert "FAILURE" in captured.out
    assert "diagbot trace run_" in captured.out
    assert "/diag trace" not in captured.out
    assert "connection refused" in captured.err  # the retry warnings name the real cause
    assert "APITimeoutError" not in captured.err


def test_demo_runs_are_traceable_with_the_printed_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """`diagbot demo` prints, for each run, the exact `DATABASE_URL=... diagbot trace RUN` that shows it afterwards."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the demo's kept database lands under the test's folder
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert main(["demo"]) == 0
    commands = re.findall(r"trace it: DATABASE_URL=(\S+) diagbot trace (run_[0-9a-f]+)", capsys.readouterr().out)
    assert len(commands) >= 5
    url, run_id = commands[-1]
    assert str(tmp_path) in url
    monkeypatch.setenv("DATABASE_URL", url)
    assert main(["trace", run_id]) == 0
    assert "RUN_FINISHED" in capsys.readouterr().out


async def _seed_votes(tmp_path: Path) -> None:
    database = Database(f"sqlite+aiosqlite:///{tmp_path}/cli.db")
    try:
        await upgrade(database)
        store = SqlFeedbackStore(database)
        now = datetime.now(UTC)
        await store.record(Feedback(run_id="run_a", user="U1", team="T1", vote=Vote.UP, at=now - timedelta(days=1)))
        await store.record(Feedback(run_id="run_a", user="U1", team="T1", vote=Vote.DOWN, at=now - timedelta(hours=1)))
        await store.record(Feedback(run_id="run_b", user="U2", team="T1", vote=Vote.UP, at=now - timedelta(days=30)))
    finally:
        await database.dispose()


async def test_feedback_exports_the_votes_of_the_period_as_json_and_csv(tmp_path: Path) -> None:
    """`diagbot feedback --since 7d` lists each (run, user)'s latest vote of the last 7 days; older ones are left out."""
    await _seed_votes(tmp_path)
    code, out, err = await diagbot(clean_env(tmp_path), "feedback", "--since", "7d", "--format", "json")
    assert code == 0, err
    assert [(r["run_id"], r["user"], r["vote"]) for r in json.loads(out)] == [("run_a", "U1", "down")]
    code, out, _ = await diagbot(clean_env(tmp_path), "feedback", "--since", "60d")
    assert out.splitlines()[0] == "at,run_id,team,user,vote"
    assert [line.split(",")[1:] for line in out.splitlines()[1:]] == [["run_b", "T1", "U2", "up"],
                                                                       ["run_a", "T1", "U1", "down"]]


async def test_feedback_with_a_bad_age_is_a_usage_error(tmp_path: Path) -> None:
    """A --since that is not an age says how to write one and exits 2."""
    code, _, err = await diagbot(clean_env(tmp_path), "feedback", "--since", "lately")
    assert code == 2
    assert "7d, 12h or 2w" in err


def test_worker_without_redis_is_refused_with_the_reason(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """`diagbot worker` shares a queue through Redis: without REDIS_URL it would wait for turns nobody can give it."""
    monkeypatch.delenv("REDIS_URL", raising=False)
    assert main(["worker"]) == 2
    err = capsys.readouterr().err
    assert "diagbot worker needs REDIS_URL" in err
    assert "diagbot serve" in err
