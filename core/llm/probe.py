"""The probe behind `diagbot check --model`: what the configured endpoint does with the requests the bot sends.

Endpoints that call themselves OpenAI-compatible differ (llama-cpp-python, Ollama, vLLM, proxies): some leave
tools out of the prompt unless `tool_choice` is sent, refuse some `tool_choice` values or strict schemas, drop
`role: tool` results, HTML-escape the prompt or fail on `content: null`; small models often write their calls as
text. So the agent's probe is shaped like the agent's request — its system prompt, every offered tool including
the submit function, the strict or plain schemas and the `tool_choice` the bot would send — adapted the way the
bot adapts at run time (core/llm/openai_model.EndpointAdaptation), and read the way the bot reads the reply
(native calls, else calls written as text). The reviewer's probe is shaped like the SemanticGuard's request. Each
request goes through the `openai` SDK, so the answer is the endpoint's; each problem line says what to change.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import openai
from openai import AsyncOpenAI

from core.contracts.draft import Analysis, AnalysisKind, DiagnosisDraft, Limitations
from core.contracts.release import VerifiedEvidenceSnapshot
from core.health.result import CheckResult, Level
from core.llm.openai_model import EndpointAdaptation, _error_text
from core.llm.text_calls import calls_in_text, data_texts
from core.llm.wire import parse_json_object
from core.steps.judge import build_judge_input, parse_verdict
from core.tools.logs.args import NAME as LOGS_TOOL  # the probe replays one logs call (a sample of real traffic)

AGENT_QUESTION = "why is order-service failing since 23:00?"
RETRYABLE_SHAPE = (400, 422, 500)
FIX_FUNCTION_CALLING = (
    "serve the model with its own chat template (llama-cpp-python: no --chat_format, the GGUF's template; vLLM: "
    "--enable-auto-tool-choice --tool-call-parser hermes) or use a tool-capable model")


@dataclass(frozen=True)
class AgentShape:
    """What the bot sends: the prompts, the offered function schemas and the configured tool_choice."""

    agent_prompt: str
    judge_prompt: str
    tools: list[dict[str, Any]]
    tool_choice: str | None = None
    guard_model: str | None = None
    max_tokens: int | None = None


def capability(name: str, *, ok: bool, detail: str, fix: str = "") -> CheckResult:
    """One capability as a `diagbot check` line (`model.<name>`): ok, or a warning with the fix."""
    return CheckResult(name=f"model.{name}", level=Level.OK if ok else Level.WARN, detail=detail, fix=fix)


@dataclass
class _AgentReply:
    names: list[str] = field(default_factory=list)
    text_format: str | None = None
    refused: list[str] = field(default_factory=list)
    """What the endpoint refused on the way (e.g. 'tool_choice=required (HTTP 500)')."""


class ModelProbe:
    """Runs each capability probe against one model of one endpoint."""

    def __init__(self, client: AsyncOpenAI, model: str, shape: AgentShape, *, timeout_s: float = 30.0) -> None:
        self.client = client
        self.model = model
        self.shape = shape
        self.timeout_s = timeout_s
        self.adapt = EndpointAdaptation()

    async def run(self) -> list[CheckResult]:
        """Every probe; one that raises is reported as a problem, never a traceback. The agent's probes run in order
        (each later one is sent as adapted by the earlier ones, as the bot's requests are)."""
        independent = asyncio.gather(*(self._safely(p) for p in (self.plain_json, self.review, self.prompt_escaping)))
        agent: list[CheckResult] = []
        for probe in (self.tool_calls, self.tool_results):
            agent.extend(await self._safely_many(probe))
        return [*await independent, *agent]

    async def _safely_many(self, probe: Callable[[], Awaitable[list[CheckResult]]]) -> list[CheckResult]:
        name = probe.__name__
        try:
            return await asyncio.wait_for(probe(), 3 * self.timeout_s + 5)
        except (TimeoutError, openai.APITimeoutError):
            return [capability(name, ok=False, detail=f"no answer within {self.timeout_s:.0f} s",
                               fix="raise DIAG_MODEL_TIMEOUT_S for a slow (CPU-hosted) endpoint")]
        except openai.APIStatusError as exc:
            return [capability(name, ok=False, detail=f"HTTP {exc.status_code}", fix=_status_fix(exc.status_code))]
        except openai.APIConnectionError:
            return [capability(name, ok=False, detail="endpoint unreachable",
                               fix="check OPENAI_BASE_URL (scheme, host, port, /v1) and that the server runs")]

    async def _safely(self, probe: Callable[[], Awaitable[CheckResult]]) -> CheckResult:
        async def one() -> list[CheckResult]:
            return [await probe()]

        one.__name__ = probe.__name__
        return (await self._safely_many(one))[0]

    async def _chat(self, messages: list[dict[str, Any]], *, model: str | None = None, **extra: Any) -> Any:
        create: Any = self.client.chat.completions.create  # plain dict messages, as the endpoint receives them
        if self.shape.max_tokens:
            extra["max_tokens"] = self.shape.max_tokens
        return await create(model=model or self.model, messages=messages, timeout=self.timeout_s, **extra)

    async def _agent_chat(self, messages: list[dict[str, Any]], refused: list[str],
                          tool_choice: str | None = None) -> Any:
        """One agent-shaped request, adapted like the bot's: a refused shape is learnt and the request sent again."""
        choice = tool_choice if tool_choice is not None else self.adapt.tool_choice(self.shape.tool_choice)
        for _ in range(4):
            tools = self.adapt.tools(self.shape.tools)
            extra = {"tool_choice": choice} if choice else {}
            try:
                reply = await self._chat(self.adapt.messages(messages), tools=tools, **extra)
                self.adapt.accepted(choice)
                return reply
            except openai.APIStatusError as exc:
                strict_before, choices_before = self.adapt.no_strict, set(self.adapt.refused_choices)
                if exc.status_code not in RETRYABLE_SHAPE or not self.adapt.learn(
                        exc.status_code, messages, tools, choice, _error_text(exc)):
                    raise
                if self.adapt.no_strict and not strict_before:
                    refused.append(f"strict schemas (HTTP {exc.status_code})")
                if self.adapt.refused_choices != choices_before:
                    refused.append(f"tool_choice={choice} (HTTP {exc.status_code})")
                    choice = self.adapt.tool_choice(choice)
        raise RuntimeError("the endpoint kept refusing the agent's request")

    def _read(self, reply: Any, messages: list[dict[str, Any]], seen: _AgentReply) -> _AgentReply:
        message = reply.choices[0].message
        seen.names = [c.function.name for c in message.tool_calls or [] if getattr(c, "function", None)]
        if not seen.names:
            found = calls_in_text(message.content, data_texts(messages))
            seen.names, seen.text_format = [c.name for c in found.calls], found.format
        return seen

    def _agent_messages(self) -> list[dict[str, Any]]:
        return [{"role": "system", "content": self.shape.agent_prompt}, {"role": "user", "content": AGENT_QUESTION}]

    async def tool_calls(self) -> list[CheckResult]:
        """The agent's first step: does a request shaped like the agent's come back with calls the bot can run?"""
        messages = self._agent_messages()
        refused: list[str] = []
        seen = self._read(await self._agent_chat(messages, refused), messages, _AgentReply(refused=refused))
        lines = self._shape_lines(seen)
        offered = {t["function"]["name"] for t in self.shape.tools}
        if seen.names and set(seen.names) <= offered:
            how = f"as text ({seen.text_format}), which the bot parses" if seen.text_format else "natively"
            lines.append(capability("tool_calls", ok=True, detail=f"the agent's request gets tool calls {how}: "
                                    + ", ".join(seen.names)))
            return lines
        if seen.names:
            lines.append(capability("tool_calls", ok=False, detail="calls functions that were not offered ("
                                    + ", ".join(sorted(set(seen.names) - offered)) + "): a corrective turn, then "
                                    "FAILURE", fix="use a larger or tool-trained model"))
            return lines
        lines.append(await self._no_calls())
        return lines

    async def _no_calls(self) -> CheckResult:
        """No calls at all: would tool_choice=auto help (llama-cpp-python leaves the tools out without it)?"""
        detail = ("the agent's request gets prose, no tool call (native or written as text): every diagnosis would "
                  "end FAILURE after one corrective turn")
        if self.shape.tool_choice is None and "auto" not in self.adapt.refused_choices:
            messages = self._agent_messages()
            retry = self._read(await self._agent_chat(messages, [], tool_choice="auto"), messages, _AgentReply())
            if retry.names:
                return capability("tool_calls", ok=False, detail=detail.split(":")[0] + " unless tool_choice=auto "
                                  "is sent", fix="set DIAG_MODEL_TOOL_CHOICE=auto")
        return capability("tool_calls", ok=False, detail=detail, fix=FIX_FUNCTION_CALLING)

    def _shape_lines(self, seen: _AgentReply) -> list[CheckResult]:
        lines = []
        for refusal in seen.refused:
            if refusal.startswith("strict"):
                lines.append(capability("strict", ok=False, detail=f"refused {refusal}",
                                        fix="none needed: the bot sends plain schemas to this endpoint after its "
                                            "first refusal (or set DIAG_MODEL_STRICT=0)"))
            else:
                now = self.adapt.tool_choice(self.shape.tool_choice)
                lines.append(capability("tool_choice", ok=False, detail=f"refused {refusal}; the bot then sends "
                                        + (f"tool_choice={now}" if now else "no tool_choice"),
                                        fix=f"set DIAG_MODEL_TOOL_CHOICE={now}" if now else "unset DIAG_MODEL_TOOL_CHOICE"))
        if self.shape.tool_choice and not any(r.startswith("tool_choice") for r in seen.refused):
            lines.append(capability("tool_choice", ok=True, detail=f"tool_choice={self.shape.tool_choice} accepted"))
        return lines

    async def tool_results(self) -> list[CheckResult]:
        """The result of a tool call reaches the model in the next agent step (role: tool rendered by the template)."""
        word = f"ZEBRA-{secrets.token_hex(2).upper()}"
        projection = {"tool_call_id": "call_probe", "tool_name": LOGS_TOOL, "evidence_status": "EVIDENCE_FOUND",
                      "count": 1, "logs": [{"timestamp": "2026-11-29T23:01:00Z", "service": "order-service",
                                            "level": "ERROR", "message": f"request {word} failed"}]}
        messages = [*self._agent_messages(),
                    {"role": "assistant", "content": None, "tool_calls": [{"id": "call_probe", "type": "function",
                     "function": {"name": LOGS_TOOL, "arguments": json.dumps(
                         {"service": "order-service", "query": "failed", "level": "ERROR"})}}]},
                    {"role": "tool", "tool_call_id": "call_probe", "content": json.dumps(projection)},
                    {"role": "user", "content": "What request id did the log line show? Answer with the id only."}]
        empty_before = self.adapt.empty_content
        reply = await self._agent_chat(messages, [])
        null = capability("null_content", ok=True, detail="accepted")
        if self.adapt.empty_content and not empty_before:
            null = capability("null_content", ok=False, detail="an error on content: null",
                              fix='none needed: the bot adapts and sends content: "" to this endpoint')
        if word in json.dumps(reply.choices[0].message.model_dump(mode="json")):
            return [capability("tool_results", ok=True, detail="the agent sees the result of its tool call"), null]
        return [capability("tool_results", ok=False, detail="did not see the tool result (role: tool dropped?): the "
                           "agent would never see what its tools returned",
                           fix="use a chat template that renders role=tool messages (llama-cpp-python: drop "
                               "--chat_format chatml-function-calling and use the GGUF's own template)"), null]

    async def plain_json(self) -> CheckResult:
        """Router answers: a plain JSON object in the content."""
        reply = await self._chat([{"role": "user", "content": 'Answer with exactly this JSON and nothing else: {"ok": true}'}])
        content = reply.choices[0].message.content
        if parse_json_object(content) == {"ok": True}:
            return capability("plain_json", ok=True, detail="answers JSON when asked")
        return capability("plain_json", ok=False, detail="did not answer the JSON object asked for",
                           fix="use a larger or instruction-tuned model; the router then defaults to DIAGNOSIS")

    async def review(self) -> CheckResult:
        """The SemanticGuard's request (its prompt, a small frozen input): a well-formed verdict comes back."""
        draft = DiagnosisDraft(analysis=[Analysis(analysis_id="a1", kind=AnalysisKind.NORMAL, tool_call_ids=["call_1"],
                                                  text="order-service logged connection pool timeouts at 23:01")],
                               limitations=Limitations(scope="order-service ERROR logs"))
        projection = {"tool_call_id": "call_1", "tool_name": LOGS_TOOL, "evidence_status": "EVIDENCE_FOUND",
                      "count": 1, "logs": [{"timestamp": "2026-11-29T23:01:00Z", "level": "ERROR",
                                            "message": "HikariPool-1 - Connection is not available"}]}
        snapshot = VerifiedEvidenceSnapshot(run_id="run_probe", projections={"call_1": projection}, rule_set_version="probe")
        body, _ = build_judge_input(AGENT_QUESTION, draft, snapshot, 96 * 1024)
        messages = [{"role": "system", "content": self.shape.judge_prompt},
                    {"role": "user", "content": json.dumps(body, ensure_ascii=False)}]
        reply = await self._chat(messages, model=self.shape.guard_model)
        if parse_verdict(reply.choices[0].message.content, 4096) is not None:
            return capability("review", ok=True, detail="the reviewer's request gets a well-formed verdict")
        return capability("review", ok=False, detail="the reviewer's request did not get the JSON verdict: every "
                          "review would be unavailable and every diagnosis a safe fallback",
                          fix="set DIAG_GUARD_MODEL to a model that follows JSON instructions")

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


async def probe_model(base_url: str | None, api_key: str | None, model: str, shape: AgentShape, *,
                      timeout_s: float = 30.0) -> list[CheckResult]:
    """Probe one endpoint and model with the bot's request shapes; the client is closed afterwards."""
    client = AsyncOpenAI(base_url=base_url, api_key=api_key or "unused", max_retries=0)
    try:
        return await ModelProbe(client, model, shape, timeout_s=timeout_s).run()
    finally:
        await client.close()
