"""OpenAIChatModel over the real openai SDK against the local scripted OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from openai import AsyncOpenAI

from core.llm.model import ModelUnavailable
from core.llm.openai_model import OpenAIChatModel, RemoteModelRefused, is_loopback, refuse_remote_models
from tests.fakes.openai_server import FakeOpenAIServer, load_script

REPO = Path(__file__).resolve().parents[2]
MESSAGES = [{"role": "user", "content": "why is order-service failing?"}]
TOOLS = [{"type": "function", "function": {"name": "query_logs", "description": "d",
                                           "parameters": {"type": "object", "properties": {}}}}]


@pytest.fixture
async def server() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
async def model(server: FakeOpenAIServer) -> AsyncIterator[OpenAIChatModel]:
    chat = OpenAIChatModel(server.base_url, "test-key", max_retries=2, backoff_base_s=0.01)
    yield chat
    await chat.aclose()


async def test_plain_content_and_the_request_sent(server: FakeOpenAIServer, model: OpenAIChatModel) -> None:
    """Content comes back as is; the server saw the model name, messages, tools and the bearer key."""
    server.push({"content": "hello", "finish_reason": "stop"})
    reply = await model.complete(model="m1", messages=MESSAGES, tools=TOOLS)
    assert (reply.content, reply.tool_calls, reply.finish_reason, reply.reasoning) == ("hello", [], "stop", None)
    (request,) = server.requests
    assert request["model"] == "m1"
    assert request["messages"] == MESSAGES
    assert request["tools"] == TOOLS
    assert server.request_headers[0]["authorization"] == "Bearer test-key"


async def test_no_tools_key_when_no_tools(server: FakeOpenAIServer, model: OpenAIChatModel) -> None:
    """A call without tools does not send a tools field (guard and router calls)."""
    server.push({"content": "{}"})
    await model.complete(model="m", messages=MESSAGES)
    assert "tools" not in server.requests[0]


async def test_reasoning_content_is_extracted(server: FakeOpenAIServer, model: OpenAIChatModel) -> None:
    """vLLM/DeepSeek `reasoning_content` on the message is returned as reasoning."""
    server.push({"content": "x", "reasoning_content": "first I look at the logs"})
    reply = await model.complete(model="m", messages=MESSAGES)
    assert reply.reasoning == "first I look at the logs"


async def test_parallel_tool_calls_with_missing_and_duplicate_ids_are_kept_as_received(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    """Parallel calls keep order; a null or omitted id is None and duplicate ids are not rewritten here."""
    server.push({"tool_calls": [
        {"id": "call_0", "name": "query_logs", "arguments": {"service": "order-service", "query": "timeout"}},
        {"id": "call_0", "name": "query_mysql", "arguments": {"sql": "SELECT 1"}},
        {"id": None, "name": "lookup_knowledge", "arguments": {"query": "hikari"}},
        {"name": "lookup_knowledge", "arguments": "{not json"},
    ]})
    reply = await model.complete(model="m", messages=MESSAGES, tools=TOOLS)
    assert [c.id for c in reply.tool_calls] == ["call_0", "call_0", None, None]
    assert [c.name for c in reply.tool_calls] == ["query_logs", "query_mysql", "lookup_knowledge", "lookup_knowledge"]
    assert json.loads(reply.tool_calls[0].arguments) == {"service": "order-service", "query": "timeout"}
    assert reply.tool_calls[3].arguments == "{not json"
    assert reply.finish_reason == "tool_calls"


async def test_500_then_success_is_retried(server: FakeOpenAIServer, model: OpenAIChatModel) -> None:
    """One HTTP 500 is retried and the next answer is returned."""
    server.push({"status": 500}, {"content": "ok"})
    reply = await model.complete(model="m", messages=MESSAGES)
    assert reply.content == "ok"
    assert len(server.requests) == 2


async def test_retries_are_bounded(server: FakeOpenAIServer, model: OpenAIChatModel) -> None:
    """With max_retries=2, three 503s give ModelUnavailable after exactly three requests."""
    server.push({"status": 503}, {"status": 503}, {"status": 503}, {"content": "never"})
    with pytest.raises(ModelUnavailable) as info:
        await model.complete(model="m", messages=MESSAGES)
    assert (info.value.status_code, info.value.attempts, len(server.requests)) == (503, 3, 3)
    assert server.remaining == 1


async def test_429_honours_retry_after(server: FakeOpenAIServer, model: OpenAIChatModel) -> None:
    """A 429 with Retry-After: 0.4 waits about that long before the retry."""
    server.push({"status": 429, "headers": {"Retry-After": "0.4"}}, {"content": "ok"})
    started = time.monotonic()
    reply = await model.complete(model="m", messages=MESSAGES)
    assert reply.content == "ok"
    assert time.monotonic() - started >= 0.35


async def test_retry_after_is_capped(server: FakeOpenAIServer) -> None:
    """A huge Retry-After is capped (here at 0.2 s) instead of stalling the run."""
    chat = OpenAIChatModel(server.base_url, "k", max_retries=1, retry_after_cap_s=0.2)
    server.push({"status": 429, "headers": {"Retry-After": "3600"}}, {"content": "ok"})
    started = time.monotonic()
    try:
        assert (await chat.complete(model="m", messages=MESSAGES)).content == "ok"
    finally:
        await chat.aclose()
    assert time.monotonic() - started < 2.0


async def test_client_errors_are_not_retried(server: FakeOpenAIServer, model: OpenAIChatModel) -> None:
    """A 400 (e.g. bad request, exhausted script) fails at once: one request, ModelUnavailable."""
    server.push({"status": 400, "body": {"error": {"message": "bad", "type": "invalid_request_error"}}}, {"content": "x"})
    with pytest.raises(ModelUnavailable) as info:
        await model.complete(model="m", messages=MESSAGES)
    assert (info.value.status_code, info.value.attempts, len(server.requests)) == (400, 1, 1)


async def test_slow_answer_times_out_then_retry_succeeds(server: FakeOpenAIServer, model: OpenAIChatModel) -> None:
    """An answer slower than timeout_s is abandoned and retried; the quick second answer wins."""
    server.push({"content": "late", "delay_s": 3.0}, {"content": "quick"})
    started = time.monotonic()
    reply = await model.complete(model="m", messages=MESSAGES, timeout_s=0.3)
    assert reply.content == "quick"
    assert time.monotonic() - started < 2.0


async def test_timeout_without_retries_is_model_unavailable(server: FakeOpenAIServer) -> None:
    """With max_retries=0 a timeout is ModelUnavailable after one attempt."""
    chat = OpenAIChatModel(server.base_url, "k", max_retries=0)
    server.push({"content": "late", "delay_s": 3.0})
    try:
        with pytest.raises(ModelUnavailable) as info:
            await chat.complete(model="m", messages=MESSAGES, timeout_s=0.2)
    finally:
        await chat.aclose()
    assert (info.value.status_code, info.value.attempts) == (None, 1)


async def test_dropped_connection_is_retried(server: FakeOpenAIServer, model: OpenAIChatModel) -> None:
    """A connection dropped without an answer is a transport error and is retried."""
    server.push({"disconnect": True}, {"content": "ok"})
    assert (await model.complete(model="m", messages=MESSAGES)).content == "ok"


async def test_unreachable_endpoint_is_model_unavailable() -> None:
    """Nothing listening on the port: ModelUnavailable after the bounded retries."""
    async with FakeOpenAIServer() as fake:
        base_url = fake.base_url
    chat = OpenAIChatModel(base_url, "k", max_retries=1, backoff_base_s=0.01)
    try:
        with pytest.raises(ModelUnavailable) as info:
            await chat.complete(model="m", messages=MESSAGES, timeout_s=2.0)
    finally:
        await chat.aclose()
    assert info.value.attempts == 2


async def test_callable_entry_sees_the_request(server: FakeOpenAIServer, model: OpenAIChatModel) -> None:
    """A callable script entry computes the reply from the request it receives."""
    server.push(lambda request: {"content": f"you said {request['messages'][-1]['content']}"})
    assert (await model.complete(model="m", messages=MESSAGES)).content == "you said why is order-service failing?"


async def test_exhausted_script_fails_loudly(server: FakeOpenAIServer, model: OpenAIChatModel) -> None:
    """A request beyond the script gets a non-retryable 400."""
    with pytest.raises(ModelUnavailable) as info:
        await model.complete(model="m", messages=MESSAGES)
    assert info.value.status_code == 400


async def test_models_endpoint_lists_models(server: FakeOpenAIServer) -> None:
    """GET /v1/models answers like OpenAI's."""
    client = AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    try:
        page = await client.models.list()
    finally:
        await client.close()
    assert [m.id for m in page.data] == ["fake-model"]


def test_script_file_format(tmp_path: Path) -> None:
    """Script files are a JSON list or {"responses": [...]}; anything else is refused."""
    listed = tmp_path / "a.json"
    listed.write_text(json.dumps([{"content": "a"}]))
    wrapped = tmp_path / "b.json"
    wrapped.write_text(json.dumps({"responses": [{"content": "b"}]}))
    bad = tmp_path / "c.json"
    bad.write_text(json.dumps({"responses": "nope"}))
    assert load_script(listed) == [{"content": "a"}]
    assert load_script(wrapped) == [{"content": "b"}]
    with pytest.raises(ValueError, match="list of response objects"):
        load_script(bad)


async def test_standalone_server_serves_a_script_file(tmp_path: Path, unused_tcp_port: int) -> None:
    """`python -m tests.fakes.openai_server --port N --script file.json` serves the file's responses."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": [{"content": "from file", "reasoning_content": "r"}]}))
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.fakes.openai_server", "--port", str(unused_tcp_port), "--script", str(script),
        cwd=REPO, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    chat = OpenAIChatModel(f"http://127.0.0.1:{unused_tcp_port}/v1", "k", max_retries=0)
    try:
        assert process.stdout is not None
        banner = await asyncio.wait_for(process.stdout.readline(), timeout=20)
        assert b"1 scripted responses" in banner
        reply = await chat.complete(model="m", messages=MESSAGES)
        assert (reply.content, reply.reasoning) == ("from file", "r")
    finally:
        await chat.aclose()
        process.terminate()
        await process.communicate()


async def test_remote_endpoints_are_refused_when_requests_are_refused(server: FakeOpenAIServer) -> None:
    """With remote requests refused, a real provider URL fails before any network I/O; loopback still works."""
    remote = OpenAIChatModel("https://api.openai.com/v1", "sk-test", max_retries=0)
    local = OpenAIChatModel(server.base_url, "k", max_retries=0)
    server.push({"content": "local ok"})
    refuse_remote_models()
    try:
        with pytest.raises(RemoteModelRefused):
            await remote.complete(model="gpt", messages=MESSAGES)
        assert (await local.complete(model="m", messages=MESSAGES)).content == "local ok"
    finally:
        refuse_remote_models(False)
        await remote.aclose()
        await local.aclose()
    assert [is_loopback(u) for u in ("http://localhost:1/v1", "http://[::1]:2/v1", "https://api.openai.com/v1", None)] == [
        True, True, False, False]


async def test_many_concurrent_requests_share_one_pooled_client(server: FakeOpenAIServer, model: OpenAIChatModel) -> None:
    """300 requests in flight at once all succeed over the model's one client, well under 300 x the delay."""
    server.push(*[{"content": "ok", "delay_s": 0.3}] * 300)
    client = model._client
    started = time.perf_counter()
    replies = await asyncio.gather(*(model.complete(model="m", messages=MESSAGES) for _ in range(300)))
    assert [r.content for r in replies] == ["ok"] * 300
    assert time.perf_counter() - started < 10
    assert model._client is client


async def test_body_that_is_not_plain_json_is_still_sent(server: FakeOpenAIServer, model: OpenAIChatModel) -> None:
    """A message with a non-string key cannot take the fast encoder; the SDK's encoder sends it as before."""
    server.push({"content": "ok"})
    reply = await model.complete(model="m", messages=[{"role": "user", "content": "hi", 1: "x"}])  # type: ignore[dict-item]
    assert reply.content == "ok"
    assert server.requests[0]["messages"][0]["1"] == "x"


def test_parse_completion_reads_the_wire_format() -> None:
    """Content, function calls (custom ones skipped, object arguments re-encoded), reasoning, usage; bad shapes fail."""
    from core.llm.openai_model import parse_completion

    reply = parse_completion({
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": None, "reasoning": "thinking",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "query_logs", "arguments": {"query": "x"}}},
                {"id": "c2", "type": "custom", "custom": {"name": "grep", "input": "x"}},
                {"id": "", "type": "function", "function": {"name": "lookup_knowledge", "arguments": None}},
            ]}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    })
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        ("c1", "query_logs", '{"query":"x"}'), (None, "lookup_knowledge", "")]
    assert (reply.content, reply.reasoning, reply.finish_reason) == (None, "thinking", "tool_calls")
    assert reply.usage.total_tokens == 5
    numeric_name = {"choices": [{"message": {"content": None, "tool_calls": [{"function": {"name": 5}}]}}]}
    assert parse_completion(numeric_name).tool_calls[0].name == "5"
    bad_finish = {"choices": [{"message": {"content": None}, "finish_reason": 5}]}
    bads: tuple[Any, ...] = ({}, [], {"choices": []}, {"choices": [{"message": None}]}, bad_finish)
    for bad in bads:
        with pytest.raises(ModelUnavailable):
            parse_completion(bad)


@pytest.mark.parametrize(("base_url", "cause"), [
    ("http://127.0.0.1:9/v1", "connection refused"),
    ("http://no-such-host.invalid/v1", "host not found"),
])
async def test_a_failed_connection_names_its_real_cause(base_url: str, cause: str) -> None:
    """The SDK reports a refused connection and an unknown host as APITimeoutError; ModelUnavailable says which."""
    refuse_remote_models(False)
    model = OpenAIChatModel(base_url, "k", max_retries=0)
    try:
        with pytest.raises(ModelUnavailable) as info:
            await model.complete(model="m", messages=[{"role": "user", "content": "x"}], timeout_s=5)
    finally:
        await model.aclose()
        refuse_remote_models(True)
    assert cause in str(info.value)
    assert "Timeout" not in str(info.value)
