"""OpenAIChatModel: the ChatModel port over the official openai SDK (any OpenAI-compatible endpoint)."""

from __future__ import annotations

import asyncio
import logging
import random
from contextvars import ContextVar
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

import openai
import orjson
from openai import AsyncOpenAI
from pydantic import ValidationError

from core.llm.model import ModelReply, ModelToolCall, ModelUnavailable, ModelUsage
from core.netdiag import TIMED_OUT, network_cause

log = logging.getLogger(__name__)

_RETRYABLE_STATUS = frozenset({408, 409, 429})
_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
# Context-local, not process-wide: set in a test session's context, it holds for the tasks started from it.
_remote_refused: ContextVar[bool] = ContextVar("diagbot_remote_models_refused", default=False)
_COMPLETIONS_PATH = "/chat/completions"
_JSON_HEADERS = MappingProxyType({"Content-Type": "application/json"})


class RemoteModelRefused(ModelUnavailable):
    """A request to a non-local endpoint while remote model requests are refused (tests)."""


def refuse_remote_models(refused: bool = True) -> None:
    """Refuse (or allow again) requests to any endpoint that is not on loopback, like pydantic-ai's ALLOW_MODEL_REQUESTS."""
    _remote_refused.set(refused)


def default_http_client() -> Any:
    """One pooled HTTP client for every request of a model: the SDK's aiohttp transport when aiohttp is installed.

    The SDK's default httpx transport spends CPU per request that grows with the number of requests in flight
    (its connection pool re-examines every connection and waiting request on each change): at 500 concurrent
    requests it costs about 6 ms CPU per request against about 3 ms for aiohttp, and 2x the wall time. Both get
    the SDK's defaults (1000 connections, keep-alive, 600 s overall / 5 s connect timeout; the per-call timeout
    still applies).
    """
    try:
        return openai.DefaultAioHttpClient()
    except RuntimeError:  # the aiohttp extra is missing: the SDK's httpx client with the same limits
        return openai.DefaultAsyncHttpxClient()


def is_loopback(base_url: str | None) -> bool:
    """True when the endpoint is on this machine (the local fake server)."""
    return bool(base_url) and (urlsplit(str(base_url)).hostname or "") in _LOOPBACK_HOSTS


class OpenAIChatModel:
    """Chat completions with bounded retries on transport errors, timeouts, 429 and 5xx (Retry-After honoured, capped)."""

    def __init__(
        self,
        base_url: str | None,
        api_key: str | None,
        *,
        max_retries: int = 2,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 8.0,
        retry_after_cap_s: float = 20.0,
        client: AsyncOpenAI | None = None,
        tool_choice: str | None = None,
        max_tokens: int | None = None,
    ) -> None:
        self._client = client or AsyncOpenAI(
            base_url=base_url, api_key=api_key or "unused", max_retries=0, http_client=default_http_client()
        )
        self._loopback = is_loopback(str(self._client.base_url))
        self.max_retries = max(0, max_retries)
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.retry_after_cap_s = retry_after_cap_s
        self.tool_choice = tool_choice
        self.max_tokens = max_tokens
        self.adapt = EndpointAdaptation()

    async def complete(
        self,
        *,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        timeout_s: float = 60.0,
    ) -> ModelReply:
        """One completion; retried at most max_retries times, then ModelUnavailable."""
        if _remote_refused.get() and not self._loopback:
            raise RemoteModelRefused("remote model requests are refused here; point the model at the local fake server")
        attempt = 0
        while True:
            attempt += 1
            try:
                reply = await self._once(model, self.adapt.messages(messages), self.adapt.tools(tools), timeout_s)
                self.adapt.accepted(self._choice(tools))
                return reply
            except (openai.APIConnectionError, openai.APIStatusError) as exc:  # APITimeoutError is a connection error
                status = exc.status_code if isinstance(exc, openai.APIStatusError) else None
                if status is not None and self.adapt.learn(status, messages, tools, self._choice(tools), _error_text(exc)):
                    attempt -= 1  # the request was malformed for this endpoint, not a failed attempt
                    continue
                retryable = status is None or status in _RETRYABLE_STATUS or status >= 500
                if not retryable or attempt > self.max_retries:
                    raise ModelUnavailable(_describe(exc), status_code=status, attempts=attempt) from exc
                delay = self._delay(attempt, exc)
                log.warning("model call failed (%s), retry %d/%d in %.2fs", _describe(exc), attempt, self.max_retries, delay)
                await asyncio.sleep(delay)
            except openai.OpenAIError as exc:
                raise ModelUnavailable(_describe(exc), attempts=attempt) from exc

    async def _once(
        self, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, timeout_s: float
    ) -> ModelReply:
        body: dict[str, Any] = {"model": model, "messages": messages}
        if self.max_tokens:
            body["max_tokens"] = self.max_tokens
        if tools:
            body["tools"] = tools
            if choice := self._choice(tools):
                body["tool_choice"] = choice
        # The same POST `chat.completions.create` makes, minus two costs that grow with the conversation: its walk
        # of the TypedDict annotations over every message and tool schema (the body is plain JSON already), and the
        # build of the typed ChatCompletion (only a few fields are read). Status errors, timeouts and connection
        # errors are raised by the SDK exactly as before; the body is encoded and decoded with orjson.
        try:
            content = orjson.dumps(body)
        except TypeError:  # not plain JSON (a caller passing Python objects): let the SDK encode it as before
            raw = await self._client.post(_COMPLETIONS_PATH, cast_to=bytes, body=body, options=self._options(timeout_s))
        else:
            raw = await self._client.post(_COMPLETIONS_PATH, cast_to=bytes, content=content, options=self._options(timeout_s))
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise ModelUnavailable("the endpoint returned a body that is not JSON") from exc
        return parse_completion(data)

    def _choice(self, tools: list[dict[str, Any]] | None) -> str | None:
        """The tool_choice to send: the configured one, unless this endpoint refused it (then "auto", then none)."""
        return self.adapt.tool_choice(self.tool_choice) if tools else None

    @staticmethod
    def _options(timeout_s: float) -> Any:
        return {"timeout": timeout_s, "headers": _JSON_HEADERS, "security": {"bearer_auth": True}}

    def _delay(self, attempt: int, exc: Exception) -> float:
        retry_after = _retry_after(exc)
        if retry_after is not None:
            return float(min(max(retry_after, 0.0), self.retry_after_cap_s))
        backoff = min(self.backoff_base_s * (2.0 ** (attempt - 1)), self.backoff_max_s)
        return backoff * (1 - 0.25 * random.random())

    async def aclose(self) -> None:
        """Close the underlying HTTP client."""
        await self._client.close()


class EndpointAdaptation:
    """What this endpoint turned out not to accept, learnt from its 4xx/5xx answers, each adapted once and for good:
    `strict: true` function schemas (sent without it afterwards), assistant messages with `content: null` (sent as
    "" afterwards; llama-cpp-python answers them with HTTP 500) and the configured `tool_choice` (left out afterwards;
    llama-cpp-python's chatml-function-calling handler fails with HTTP 500 on anything but "auto")."""

    def __init__(self) -> None:
        self.no_strict = False
        self.empty_content = False
        self.refused_choices: set[str] = set()
        self.accepted_choices: set[str] = set()

    def learn(self, status: int, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
              tool_choice: str | None = None, error_text: str = "") -> bool:
        """True when the failed request had something this endpoint may reject that is not yet adapted: the part its
        error names, else for a 500 (a server failing on it) a tool_choice not yet seen accepted before null content
        and strict schemas, for a 400/422 (a validator refusing it) strict schemas, null content, then tool_choice."""
        if status not in (400, 422, 500):
            return False
        if tool_choice and "tool_choice" in error_text.lower():
            return self._drop_tool_choice(status, tool_choice)
        suspects = [self._strict, self._null_content, self._choice]
        if status == 500 and tool_choice not in self.accepted_choices:
            suspects = [self._choice, self._null_content, self._strict]
        return any(suspect(status, messages, tools, tool_choice) for suspect in suspects)

    def accepted(self, tool_choice: str | None) -> None:
        """A request with this tool_choice was answered: it is not what a later failure is about."""
        if tool_choice:
            self.accepted_choices.add(tool_choice)

    def _strict(self, status: int, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                tool_choice: str | None) -> bool:
        if self.no_strict or not any(t.get("function", {}).get("strict") for t in tools or []):
            return False
        self.no_strict = True
        log.warning("the model endpoint refused strict function schemas (HTTP %d); sending them without strict", status)
        return True

    def _null_content(self, status: int, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                      tool_choice: str | None) -> bool:
        if self.empty_content or not any(m.get("role") == "assistant" and m.get("content") is None for m in messages):
            return False
        self.empty_content = True
        log.warning("the model endpoint refused content: null (HTTP %d); sending empty content instead", status)
        return True

    def _choice(self, status: int, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                tool_choice: str | None) -> bool:
        return bool(tool_choice) and self._drop_tool_choice(status, str(tool_choice))

    def _drop_tool_choice(self, status: int, tool_choice: str) -> bool:
        if tool_choice in self.refused_choices:
            return False
        self.refused_choices.add(tool_choice)
        log.warning("the model endpoint refused tool_choice=%s (HTTP %d); sending %s instead (set "
                    "DIAG_MODEL_TOOL_CHOICE accordingly)", tool_choice, status, self.tool_choice(tool_choice) or "none")
        return True

    def tool_choice(self, configured: str | None) -> str | None:
        """The configured tool_choice as this endpoint accepts it: "required" it refused becomes "auto" (what
        llama-cpp-python's function-calling handler supports), a refused "auto" is left out."""
        if not configured or configured not in self.refused_choices:
            return configured
        return "auto" if "auto" not in self.refused_choices else None

    def messages(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The messages as this endpoint accepts them."""
        if not self.empty_content:
            return messages
        return [dict(m, content="") if m.get("role") == "assistant" and m.get("content") is None else m for m in messages]

    def tools(self, tools: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        """The tool schemas as this endpoint accepts them."""
        if not tools or not self.no_strict:
            return tools
        return [{**t, "function": {k: v for k, v in t["function"].items() if k != "strict"}} for t in tools]


def parse_completion(data: Any) -> ModelReply:
    """A decoded chat completion (OpenAI wire format) as a ModelReply: first choice, function tool calls, usage."""
    choices = data.get("choices") if isinstance(data, dict) else None
    if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
        raise ModelUnavailable("the endpoint returned no choices")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise ModelUnavailable("the endpoint returned a choice without a message")
    content = message.get("content")
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):  # e.g. a custom (non-function) tool call
            continue
        arguments = function.get("arguments") or ""
        calls.append(ModelToolCall(
            id=call.get("id") or None,
            name=str(function.get("name") or ""),
            arguments=arguments if isinstance(arguments, str) else orjson.dumps(arguments).decode(),
        ))
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    try:
        return ModelReply(
            content=content if content is None or isinstance(content, str) else str(content),
            tool_calls=calls,
            reasoning=_reasoning(message),
            finish_reason=choice.get("finish_reason"),
            usage=ModelUsage(
                prompt_tokens=usage.get("prompt_tokens") or 0,
                completion_tokens=usage.get("completion_tokens") or 0,
                total_tokens=usage.get("total_tokens") or 0,
            ),
        )
    except ValidationError as exc:
        raise ModelUnavailable("the endpoint returned a malformed completion") from exc


def _reasoning(message: dict[str, Any]) -> str | None:
    """vLLM/DeepSeek put `reasoning_content` (others `reasoning`) on the message as an extra field."""
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def _error_text(exc: Exception) -> str:
    """The endpoint's error message (to tell which part of the request it refused); never logged or shown."""
    if not isinstance(exc, openai.APIStatusError):
        return ""
    body = exc.body
    error = body.get("error", body) if isinstance(body, dict) else body
    message = error.get("message") if isinstance(error, dict) else error
    return str(message or exc.message)[:2000]


def _retry_after(exc: Exception) -> float | None:
    if not isinstance(exc, openai.APIStatusError):
        return None
    headers = exc.response.headers
    for header, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(header)
        if value is None:
            continue
        try:
            return float(value) / divisor
        except ValueError:
            continue
    return None


def _describe(exc: Exception) -> str:
    """A safe one-line description: the error class and status, or the real cause of a failed connection (the SDK
    reports a refused connection or an unknown host as APITimeoutError); never the request body."""
    status = getattr(exc, "status_code", None)
    cause = network_cause(exc) if status is None else None
    if cause is not None and cause != TIMED_OUT:
        return f"cannot connect: {cause}"
    return f"{type(exc).__name__}" + (f" (HTTP {status})" if status else "")
