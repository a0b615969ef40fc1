"""DIAG_LOG_FORMAT=json: one JSON object per line carrying run_id and session; INFO has no payloads, prompts,
reasoning or per-request HTTP lines of the model client (the real openai client against the local fake server)."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from pathlib import Path

import pytest
from pydantic import SecretStr

from core.bootstrap import build_services
from core.contracts.release import Outcome
from core.contracts.run import SessionKey, Turn
from core.observability.log_context import log_fields
from core.observability.log_setup import configure_logging
from core.settings import DEMO_CLOCK, Settings
from testkit.openai_server import FakeOpenAIServer
from tests.bot.test_real_pipeline import _grounded_script

REASONING = "private-chain-of-thought-7f3a"


def _lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


@pytest.mark.usefixtures("restore_logging")
async def test_json_lines_carry_the_run_of_each_task() -> None:
    """Concurrent tasks bound to different runs log their own run_id/session; outside a run both are null."""
    stream = io.StringIO()
    configure_logging(logging.INFO, "json", stream)
    log = logging.getLogger("tests.log_format")

    async def run(n: int) -> None:
        with log_fields(run_id=f"run_{n}", session=f"T:C:{n}"):
            await asyncio.sleep(0.01 * (3 - n))  # the tasks interleave: each logs while the others are bound
            log.info("step of %d", n)

    await asyncio.gather(*(run(n) for n in range(3)))
    log.warning("outside")
    lines = _lines(stream)
    by_message = {line["message"]: line for line in lines}
    for n in range(3):
        assert by_message[f"step of {n}"]["run_id"] == f"run_{n}"
        assert by_message[f"step of {n}"]["session"] == f"T:C:{n}"
        assert by_message[f"step of {n}"]["level"] == "INFO"
    assert by_message["outside"]["run_id"] is None
    assert {"time", "level", "logger", "message", "run_id", "session"} <= set(by_message["outside"])


@pytest.mark.usefixtures("restore_logging")
async def test_text_format_stays_one_human_line() -> None:
    """The default text format is unchanged: level, logger and message on one line."""
    stream = io.StringIO()
    configure_logging(logging.INFO, "text", stream)
    with log_fields(run_id="run_x", session="s"):
        logging.getLogger("tests.log_format").info("hello")
    [line] = stream.getvalue().splitlines()
    assert line.endswith("INFO tests.log_format: hello")


@pytest.mark.usefixtures("restore_logging")
async def test_a_real_run_logs_json_with_its_run_id_and_no_private_text(tmp_path: Path) -> None:
    """A whole diagnosis through the real openai client at INFO: every line is JSON, the run's lines carry its run_id
    and session, and none holds the prompt, the model's reasoning, a tool payload or an HTTP request line."""
    stream = io.StringIO()
    configure_logging(logging.INFO, "json", stream)
    script = _grounded_script()
    script[1] = {**script[1], "reasoning_content": REASONING}
    async with FakeOpenAIServer() as server:
        server.push(*script)
        settings = Settings(openai_base_url=server.base_url, openai_api_key=SecretStr("k"), diag_model="m",
                            database_url=f"sqlite+aiosqlite:///{tmp_path}/diag.db", diag_clock=DEMO_CLOCK)
        services = await build_services(settings)
        try:
            session = SessionKey(team="T1", channel="C1", thread_ts="70.0")
            outcome = await services.chat_service.handle(
                Turn(session=session, text="why is order-service failing?", user="U1", message_ts="70.0"))
        finally:
            await services.aclose()
    assert outcome.outcome is Outcome.SUCCESS
    text = stream.getvalue()
    lines = _lines(stream)
    run_lines = [line for line in lines if line["run_id"] == outcome.run_id]
    assert run_lines, text
    assert all(line["session"] == session.as_str() for line in run_lines)
    assert any(line["logger"] == "core.steps.judge" for line in run_lines)
    for forbidden in ("HTTP Request", "/chat/completions", REASONING, "# Diagnosis Agent", "You are the diagnosis agent",
                      "HikariPool-1 - Connection is not available"):
        assert forbidden not in text
