"""The tool-calling probe behind `diagbot check --model`: what the configured endpoint really supports.

Endpoints that call themselves OpenAI-compatible differ (llama-cpp-python, Ollama, vLLM, proxies): some leave
tools out of the prompt unless `tool_choice` is sent, drop `role: tool` results, HTML-escape the prompt or fail
on `content: null`. Each capability is probed with one small request through the `openai` SDK, so the answer
is the endpoint's, not ours; each failing one says what to change.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

import openai
from openai import AsyncOpenAI

from core.health.result import CheckResult, Level
from core.llm.wire import parse_json_object


def echo_tool() -> dict[str, Any]:
    """The probe's one function schema, fresh for each request (the SDK may keep what it is given)."""
    return {
        "type": "function",
        "function": {
            "name": "echo",
            "description": "Echo a token back.",
            "parameters": {"type": "object", "properties": {"token": {"type": "string"}}, "required": ["token"],
                           "additionalProperties": False},
        },
    }


def capability(name: str, *, ok: bool, detail: str, fix: str = "") -> CheckResult:
    """One capability as a `diagbot check` line (`model.<name>`): ok, or a warning with the fix."""
    return CheckResult(name=f"model.{name}", level=Level.OK if ok else Level.WARN, detail=detail, fix=fix)


Completion = Callable[..., Awaitable[Any]]


class ModelProbe:
    """Runs each capability probe against one model of one endpoint."""

    def __init__(self, client: AsyncOpenAI, model: str, *, timeout_s: float = 30.0) -> None:
        self.client = client
        self.model = model
        self.timeout_s = timeout_s
        self.token = f"PROBE-{secrets.token_hex(3).upper()}"

    async def run(self) -> list[CheckResult]:
        """Every probe; one that raises is reported as a problem, never a traceback."""
        probes = [self.plain_json, self.tool_calls, self.tool_results, self.null_content,
                  self.prompt_escaping]
        return list(await asyncio.gather(*(self._safely(p) for p in probes)))

    async def _safely(self, probe: Callable[[], Awaitable[CheckResult]]) -> CheckResult:
        name = probe.__name__
        try:
            return await asyncio.wait_for(probe(), self.timeout_s + 5)
        except (TimeoutError, openai.APITimeoutError):
            return capability(name, ok=False, detail=f"no answer within {self.timeout_s:.0f} s",
                               fix="raise DIAG_MODEL_TIMEOUT_S for a slow (CPU-hosted) endpoint")
        except openai.APIStatusError as exc:
            return capability(name, ok=False, detail=f"HTTP {exc.status_code}", fix=_status_fix(exc.status_code))
        except openai.APIConnectionError:
            return capability(name, ok=False, detail="endpoint unreachable",
                               fix="check OPENAI_BASE_URL (scheme, host, port, /v1) and that the server runs")

    async def _chat(self, messages: list[dict[str, Any]], **extra: Any) -> Any:
        create: Any = self.client.chat.completions.create  # plain dict messages, as the endpoint receives them
        return await create(model=self.model, messages=messages, timeout=self.timeout_s, **extra)

    async def plain_json(self) -> CheckResult:
        """Router and reviewer answers: a plain JSON object in the content."""
        reply = await self._chat([{"role": "user", "content": 'Answer with exactly this JSON and nothing else: {"ok": true}'}])
        content = reply.choices[0].message.content
        if parse_json_object(content) == {"ok": True}:
            return capability("plain_json", ok=True, detail="answers JSON when asked")
        return capability("plain_json", ok=False, detail="did not answer the JSON object asked for",
                           fix="use a larger or instruction-tuned model; the router then defaults to DIAGNOSIS")

    async def tool_calls(self) -> CheckResult:
        """The agent's steps: `tools` accepted and `tool_calls` returned (with or without tool_choice)."""
        ask = [{"role": "user", "content": f"Call the echo function with token {self.token}."}]
        reply = await self._chat(ask, tools=[echo_tool()])
        if reply.choices[0].message.tool_calls:
            return capability("tool_calls", ok=True, detail="returns tool_calls")
        forced = await self._chat(ask, tools=[echo_tool()], tool_choice="required")
        if forced.choices[0].message.tool_calls:
            return capability("tool_calls", ok=False, detail="returns tool_calls only when tool_choice is sent",
                               fix="set DIAG_MODEL_TOOL_CHOICE=required")
        return capability("tool_calls", ok=False, detail="never returns tool_calls",
                           fix="enable function calling on the server (llama-cpp-python: --chat_format "
                               "chatml-function-calling; vLLM: --enable-auto-tool-choice --tool-call-parser …) "
                               "or use a tool-capable model")

    async def tool_results(self) -> CheckResult:
        """The result of a tool call reaches the model in the next turn (role: tool rendered by the chat template)."""
        secret_word = f"ZEBRA-{secrets.token_hex(2).upper()}"
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": "Call echo, then tell me the word it returned."},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_probe", "type": "function", "function": {"name": "echo", "arguments": json.dumps({"token": "x"})}}]},
            {"role": "tool", "tool_call_id": "call_probe", "content": json.dumps({"word": secret_word})},
            {"role": "user", "content": "What word did echo return? Answer with the word only."},
        ]
        reply = await self._chat(messages, tools=[echo_tool()])
        text = json.dumps(reply.choices[0].message.model_dump(mode="json"))
        if secret_word in text:
            return capability("tool_results", ok=True, detail="sees the result of a tool call")
        return capability("tool_results", ok=False, detail="did not see the tool result (role: tool dropped?)",
                           fix="use a chat template that renders role=tool messages (another --chat_format / model)")

    async def null_content(self) -> CheckResult:
        """An assistant message with content: null and tool_calls is accepted."""
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": "Call echo."},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_null", "type": "function", "function": {"name": "echo", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_null", "content": "{}"},
        ]
        try:
            await self._chat(messages, tools=[echo_tool()])
        except openai.APIStatusError as exc:
            return capability("null_content", ok=False, detail=f"HTTP {exc.status_code} on content: null",
                               fix='none needed: the bot adapts and sends content: "" to this endpoint')
        return capability("null_content", ok=True, detail="accepted")

    async def prompt_escaping(self) -> CheckResult:
        """The prompt reaches the model as written (some templates HTML-escape it: `<` becomes `&lt;`)."""
        probe = "<b>&'\""
        reply = await self._chat([{"role": "user", "content": f"Repeat exactly, with no other text: {probe}"}])
        content = reply.choices[0].message.content or ""
        if "&lt;" in content or "&amp;" in content or "&#" in content:
            return capability("prompt_escaping", ok=False, detail="the prompt arrives HTML-escaped",
                               fix="use a chat template without autoescape (llama-cpp-python: another --chat_format)")
        return capability("prompt_escaping", ok=True, detail="not escaped")


def _status_fix(status: int) -> str:
    if status in (401, 403):
        return "check OPENAI_API_KEY"
    if status == 404:
        return "check OPENAI_BASE_URL (it usually ends in /v1) and DIAG_MODEL"
    if status == 429:
        return "the endpoint is rate limiting; try again later or raise its limits"
    return "see the model server's log"


async def probe_model(base_url: str | None, api_key: str | None, model: str, *, timeout_s: float = 30.0) -> list[CheckResult]:
    """Probe one endpoint and model; the client is closed afterwards."""
    client = AsyncOpenAI(base_url=base_url, api_key=api_key or "unused", max_retries=0)
    try:
        return await ModelProbe(client, model, timeout_s=timeout_s).run()
    finally:
        await client.close()
