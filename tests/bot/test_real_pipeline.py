"""End to end without doubles in core: signed Slack requests -> the app -> the real ChatService (build_services) with
the local scripted OpenAI-compatible server, demo tools, SQLite and real Redis -> the fake Slack Web API."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import redis.asyncio as aioredis
from aiohttp.test_utils import TestServer
from pydantic import SecretStr

from bot.app import build_bot
from bot.serve import build_web_app
from core.bootstrap import build_services
from core.settings import DEMO_CLOCK, Settings
from core.stores.kv import RedisKV
from core.stores.sql.db import Database
from core.stores.sql.feedback import SqlFeedbackStore
from entrypoints.demo import recorded_reply
from testkit.openai_server import FakeOpenAIServer
from tests.bot.conftest import Harness
from tests.bot.fake_chat import FakeChat
from tests.bot.slack_requests import SECRET, SlackSender, mention, message
from tests.fakes.slack_interactions import block_actions
from tests.fakes.slack_server import FakeSlack

HIKARI = {"service": "order-service", "query": "HikariPool", "level": "ERROR"}


def _route(intent: str) -> dict[str, Any]:
    return {"content": json.dumps({"intent": intent})}


def _grounded_script() -> list[Any]:
    draft = {
        "conclusion": {"text": "order-service is failing on HikariPool connection errors.", "based_on_analysis_ids": ["a1"]},
        "analysis": [{"analysis_id": "a1", "kind": "NORMAL", "text": "order-service logged HikariPool connection errors.",
                      "tool_call_ids": ["{{call:1}}"]}],
        "action_plan": [], "recommendations": [],
        "limitations": {"scope": "order-service ERROR logs in the default window", "missing_info": []},
    }
    return [
        _route("DIAGNOSIS"),
        {"tool_calls": [{"id": "call_t0", "name": "query_logs", "arguments": HIKARI}]},
        recorded_reply({"tool_calls": [{"id": "call_submit", "name": "submit_diagnosis_draft", "arguments": draft}]}),
        {"content": json.dumps({"verdict": "SUPPORTED", "reason": "the cited lines show it"})},
    ]


@pytest.fixture
async def real(fake_slack: FakeSlack, redis_client: aioredis.Redis, key_prefix: str, tmp_path: Path,
               request: pytest.FixtureRequest) -> AsyncIterator[tuple[Harness, FakeOpenAIServer]]:
    """The app over the real services; the model is the local scripted server (indirect param: streaming on)."""
    async with FakeOpenAIServer() as model_server:
        settings = Settings(
            diag_first_look=False,  # this test counts the agent's own calls; the first look: test_first_look_run.py
            diag_slack_streaming=bool(getattr(request, "param", False)),
            slack_bot_token=SecretStr("xoxb-test"), slack_signing_secret=SecretStr(SECRET), slack_api_url=fake_slack.api_url,
            openai_base_url=model_server.base_url, openai_api_key=SecretStr("test"), diag_model="test-model",
            database_url=f"sqlite+aiosqlite:///{tmp_path}/diag.db", diag_clock=DEMO_CLOCK,
        )
        services = await build_services(settings, kv=RedisKV(redis_client, prefix=key_prefix))
        bot = build_bot(settings, services.chat_service, services.kv, progress_interval_s=0.05,
                        feedback=services.feedback)
        server = TestServer(build_web_app(bot.app))
        await server.start_server()
        try:
            async with aiohttp.ClientSession() as session:
                sender = SlackSender(session, str(server.make_url("/slack/events")))
                yield Harness(bot, fake_slack, FakeChat(), sender), model_server
                await bot.aclose(timeout_s=5)
        finally:
            await server.close()
            await services.aclose()


async def test_grounded_diagnosis_reaches_slack_and_its_trace_is_viewable(real: tuple[Harness, FakeOpenAIServer]) -> None:
    """A mention runs the real pipeline; the published report lands in the thread; a follow-up reply is a chat turn;
    the run's trace is shown to a channel member."""
    h, model = real
    model.push(*_grounded_script())
    await h.send.event(mention(ts="31.0"))
    await h.settle(30)
    final = h.slack.calls_of("chat.update")[-1].params
    payload = final["metadata"]["event_payload"]
    assert (payload["intent"], payload["outcome"], payload["fallback_type"]) == ("DIAGNOSIS", "SUCCESS", None)
    blocks = json.dumps(final["blocks"], ensure_ascii=False)
    assert "HikariPool connection errors" in blocks
    assert "query_logs" in blocks
    run_id = payload["run_id"]

    model.push(_route("CHAT"))
    await h.send.event(message("thanks, what else can you do?", ts="31.5", thread_ts="31.0"))
    await h.settle(30)
    chat_final = h.slack.calls_of("chat.update")[-1].params["metadata"]["event_payload"]
    assert (chat_final["intent"], chat_final["outcome"]) == ("CHAT", "SUCCESS")

    await h.send.command(f"trace {run_id}", user="U3", response_url=h.slack.response_url())
    trace = json.dumps((await h.slack.next_response())["blocks"])
    assert "RUN_STARTED" in trace
    assert "SEMANTIC_GUARD" in trace
    assert "RUN_FINISHED" in trace


POOL_SQL = ("SELECT ts, service, active, idle, waiting FROM db_connection_pool_stats "
            "WHERE service = 'order-service' ORDER BY ts DESC LIMIT 5")
CONCLUSION = "order-service is failing on HikariPool connection errors."
POOL_TEXT = "The order-service pool statistics were returned by the database."


def _two_tool_script() -> list[Any]:
    draft = {
        "conclusion": {"text": CONCLUSION, "based_on_analysis_ids": ["a1", "a2"]},
        "analysis": [
            {"analysis_id": "a1", "kind": "NORMAL", "text": "order-service logged HikariPool connection errors.",
             "tool_call_ids": ["{{call:1}}"]},
            {"analysis_id": "a2", "kind": "NORMAL", "text": POOL_TEXT, "tool_call_ids": ["{{call:2}}"]},
        ],
        "action_plan": [], "recommendations": [],
        "limitations": {"scope": "order-service ERROR logs and pool statistics", "missing_info": []},
    }
    return [
        _route("DIAGNOSIS"),
        {"tool_calls": [{"id": "call_t0", "name": "query_logs", "arguments": HIKARI}]},
        {"tool_calls": [{"id": "call_t1", "name": "query_mysql", "arguments": {"sql": POOL_SQL}}]},
        recorded_reply({"tool_calls": [{"id": "call_submit", "name": "submit_diagnosis_draft", "arguments": draft}]}),
        {"content": json.dumps({"verdict": "SUPPORTED", "reason": "the cited lines and rows show it"})},
    ]


def _stream_chunks(slack: FakeSlack) -> list[dict[str, Any]]:
    return [c for m in ("chat.startStream", "chat.appendStream", "chat.stopStream") for call in slack.calls_of(m)
            for c in call.params.get("chunks") or []]


@pytest.mark.parametrize("real", [True], indirect=True)
async def test_streamed_progress_shows_a_task_per_tool_call_then_the_checks_and_never_the_draft(
    real: tuple[Harness, FakeOpenAIServer]
) -> None:
    """Streaming on: each tool call is a task (what was queried, its result) in call order, then the evidence check,
    the review and the release; no draft text is in any streamed chunk; one final message with metadata replaces it."""
    h, model = real
    model.push(*_two_tool_script())
    await h.send.event(mention(ts="41.0"))
    await h.settle(30)
    start = h.slack.calls_of("chat.startStream")[0].params
    assert (start["recipient_user_id"], start["recipient_team_id"], start["thread_ts"]) == ("U1", "T1", "41.0")
    assert h.slack.calls_of("chat.postMessage") == []  # no placeholder: the stream is the progress
    chunks = _stream_chunks(h.slack)
    titles: dict[str, str] = {}
    for chunk in chunks:
        if chunk["type"] == "task_update":
            titles.setdefault(chunk["id"], chunk["title"])
    ordered = list(titles.values())
    assert ordered[0].startswith('Logs · order-service "HikariPool" ERROR')
    assert ordered[1].startswith("Database · SELECT ts, service, active, idle, waiting FROM")
    assert ordered[2:] == ["Checking every claim against the tool results", "Independent review of the evidence",
                           "Preparing the answer"]
    outputs = [str(c["output"]) for c in chunks if c["type"] == "task_update" and c.get("output")]
    assert any(o.endswith("matching lines") for o in outputs)
    assert "5 rows" in outputs
    streamed = json.dumps([c.params for m in ("chat.startStream", "chat.appendStream", "chat.stopStream")
                           for c in h.slack.calls_of(m)], ensure_ascii=False)
    for draft_text in (CONCLUSION, POOL_TEXT, "order-service logged HikariPool connection errors"):
        assert draft_text not in streamed
    [final] = h.slack.finals("C1", "41.0")
    assert final["metadata"]["event_payload"]["outcome"] == "SUCCESS"
    assert CONCLUSION in json.dumps(final["blocks"], ensure_ascii=False)
    assert not h.slack.streams[("C1", final["ts"])].streaming


@pytest.mark.parametrize("real", [True], indirect=True)
async def test_streaming_refused_falls_back_to_placeholder_edits(real: tuple[Harness, FakeOpenAIServer]) -> None:
    """When Slack refuses chat.startStream, the turn posts the placeholder, edits it with the same tasks, then the
    final message replaces it."""
    h, model = real
    h.slack.fail("chat.startStream", "unknown_method")

    def logs_task_shown() -> bool:  # an edit of the placeholder shows the finished logs call as a task
        return any("Logs · order-service" in json.dumps(c.params.get("blocks"), ensure_ascii=False)
                   for c in h.slack.calls_of("chat.update"))

    shown = asyncio.Event()
    script = _two_tool_script()
    script[2] = {**script[2], "until": shown}  # the run waits after the logs call until its edit is observed
    model.push(*script)
    await h.send.event(mention(ts="42.0"))
    await h.slack.wait_until(logs_task_shown, timeout_s=20, message="a placeholder edit showing the logs task")
    shown.set()
    await h.settle(30)
    assert h.slack.calls_of("chat.postMessage")[0].params["text"] == "Looking into it…"
    [final] = h.slack.finals("C1", "42.0")
    assert final["metadata"]["event_payload"]["outcome"] == "SUCCESS"
    assert h.slack.calls_of("chat.appendStream") == []


def _button_values(blocks: list[dict[str, Any]], action_id: str) -> list[str]:
    values = [b["accessory"]["value"] for b in blocks if (b.get("accessory") or {}).get("action_id") == action_id]
    for block in blocks:
        for element in block.get("elements") or []:
            if element.get("action_id") == action_id:
                values += [element.get("value") or element["positive_button"]["value"]]
    return values


async def test_show_evidence_returns_the_findings_real_items_and_is_denied_to_non_members(
    real: tuple[Harness, FakeOpenAIServer]
) -> None:
    """Each finding's Show evidence answers with its cited call's verified items — log lines with time and level for
    the logs finding, the SQL rows as a table with column names for the pool finding — and refuses a non-member."""
    h, model = real
    model.push(*_two_tool_script())
    await h.send.event(mention(ts="43.0"))
    await h.settle(30)
    [final] = h.slack.finals("C1", "43.0")
    assert len(_button_values(final["blocks"], "show_evidence")) == 2

    def click(nth: int, user: str, key: str) -> dict[str, Any]:  # a click on the posted message, as Slack sends it
        return block_actions(final, "show_evidence", user=user, response_url=h.slack.response_url(key),
                             message_ts=final["ts"], nth=nth)

    assert click(0, "U2", "e0")["actions"][0]["text"]["text"] == "Show evidence"  # a plain_text object
    await h.send.interaction(click(0, "U2", "e1"))
    logs_view = await h.slack.next_response()
    text = json.dumps(logs_view["blocks"], ensure_ascii=False)
    assert logs_view["response_type"] == "ephemeral"
    assert re.search(r"\d\d:\d\d:\d\d ERROR [^\"]*HikariPool", text)
    await h.send.interaction(click(1, "U2", "e2"))
    sql_view = (await h.slack.next_response())["blocks"]
    [table] = [b for b in sql_view if b["type"] == "table"]
    assert [c["text"] for c in table["rows"][0]] == ["ts", "service", "active", "idle", "waiting"]
    assert all(row[1]["text"] == "order-service" for row in table["rows"][1:])
    await h.send.interaction(click(0, "U9", "e3"))
    denied = await h.slack.next_response()
    assert denied["text"] == "No run with that id is available to you."
    assert "blocks" not in denied
    run_id = final["metadata"]["event_payload"]["run_id"]
    for forged in ("²", "٣", "9" * 5000, "-1", " 1", "1\n", "10000"):  # isdigit() is not enough, nor is int()
        await h.send.action("show_evidence", f"{run_id}|{forged}", user="U2", response_url=h.slack.response_url("f"))
        assert (await h.slack.next_response())["text"] == "No run with that id is available to you.", forged


async def test_a_thumbs_up_is_stored_once_per_user_and_shown_in_the_trace(real: tuple[Harness, FakeOpenAIServer],
                                                                         tmp_path: Path) -> None:
    """👍 on the final message is stored in SQL for (run, user); voting again replaces it; the trace shows it; a
    non-member's vote is refused."""
    h, model = real
    model.push(*_grounded_script())
    await h.send.event(mention(ts="44.0"))
    await h.settle(30)
    [final] = h.slack.finals("C1", "44.0")
    [up] = _button_values(final["blocks"], "diag_feedback")
    run_id = final["metadata"]["event_payload"]["run_id"]
    assert up == f"up|{run_id}"
    for attempt in range(2):  # Slack's feedback_buttons click: the chosen button's value and text
        await h.send.interaction(block_actions(final, "diag_feedback", user="U2", message_ts=final["ts"],
                                               response_url=h.slack.response_url(f"v{attempt}")))
        assert "recorded" in (await h.slack.next_response())["text"]
    await h.send.interaction(block_actions(final, "diag_feedback", user="U9", message_ts=final["ts"], choice="negative",
                                           response_url=h.slack.response_url("v9")))
    assert (await h.slack.next_response())["text"] == "No run with that id is available to you."
    await h.send.command(f"trace {run_id}", user="U3", response_url=h.slack.response_url("t"))
    trace = json.dumps((await h.slack.next_response())["blocks"], ensure_ascii=False)
    assert "*Feedback* 👍 1 · 👎 0 (<@U2> 👍)" in trace
    database = Database(f"sqlite+aiosqlite:///{tmp_path}/diag.db")
    try:
        stored = await SqlFeedbackStore(database).for_run(run_id)
    finally:
        await database.dispose()
    assert [(v.user, v.vote.value) for v in stored] == [("U2", "up")]


@pytest.mark.parametrize("real", [True], indirect=True)
async def test_assistant_thread_question_runs_the_real_pipeline(real: tuple[Harness, FakeOpenAIServer]) -> None:
    """A question in Slack's assistant container (a DM thread) is diagnosed by the real pipeline: tasks streamed in
    the DM, the thread titled, one verified final message in the thread."""
    h, model = real
    model.push(*_grounded_script())
    await h.send.event(message("why is order-service failing?", ts="45.1", thread_ts="45.0", channel="D1",
                               channel_type="im"))
    await h.settle(30)
    assert h.slack.calls_of("chat.startStream")[0].params["channel"] == "D1"
    assert h.slack.titles[0]["thread_ts"] == "45.0"
    [final] = h.slack.finals("D1", "45.0")
    assert final["metadata"]["event_payload"]["outcome"] == "SUCCESS"
