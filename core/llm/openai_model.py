"""OpenAIChatModel: the ChatModel port over the official openai SDK (any OpenAI-compatible endpoint)."""

from __future__ import annotations

import asyncio
import logging
import random
from typing import Any
from urllib.parse import urlsplit

import openai
from openai import AsyncOpenAI

from core.llm.model import ModelReply, ModelToolCall, ModelUnavailable, ModelUsage

log = logging.getLogger(__name__)

_RETRYABLE_STATUS = frozenset({408, 409, 429})
_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
_remote_refused = False


class RemoteModelRefused(ModelUnavailable):
    """A request to a non-local endpoint while remote model requests are refused (tests)."""


def refuse_remote_models(refused: bool = True) -> None:
    """Refuse (or allow again) requests to any endpoint that is not on loopback, like pydantic-ai's ALLOW_MODEL_REQUESTS."""
    global _remote_refused
    _remote_refused = refused


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
    ) -> None:
        self._client = client or AsyncOpenAI(base_url=base_url, api_key=api_key or "unused", max_retries=0)
        self.max_retries = max(0, max_retries)
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.retry_after_cap_s = retry_after_cap_s
        self.last_attempts = 0

    async def complete(
        self,
        *,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        timeout_s: float = 60.0,
    ) -> ModelReply:
        """One completion; retried at most max_retries times, then ModelUnavailable."""
        if _remote_refused and not is_loopback(str(self._client.base_url)):
            raise RemoteModelRefused("remote model requests are refused here; point the model at the local fake server")
        attempt = 0
        while True:
            attempt += 1
            self.last_attempts = attempt
            try:
                return await self._once(model, messages, tools, timeout_s)
            except (openai.APIConnectionError, openai.APIStatusError) as exc:  # APITimeoutError is a connection error
                status = exc.status_code if isinstance(exc, openai.APIStatusError) else None
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
        kwargs: dict[str, Any] = {"model": model, "messages": messages, "timeout": timeout_s}
        if tools:
            kwargs["tools"] = tools
        completion = await self._client.chat.completions.create(**kwargs)
        if not completion.choices:
            raise ModelUnavailable("the endpoint returned no choices")
        choice = completion.choices[0]
        message = choice.message
        calls = [
            ModelToolCall(id=getattr(call, "id", None) or None, name=call.function.name, arguments=call.function.arguments or "")
            for call in (message.tool_calls or [])
            if getattr(call, "function", None) is not None
        ]
        usage = completion.usage
        return ModelReply(
            content=message.content,
            tool_calls=calls,
            reasoning=_reasoning(message),
            finish_reason=choice.finish_reason,
            usage=ModelUsage(
                prompt_tokens=usage.prompt_tokens if usage else 0,
                completion_tokens=usage.completion_tokens if usage else 0,
                total_tokens=usage.total_tokens if usage else 0,
            ),
        )

    def _delay(self, attempt: int, exc: Exception) -> float:
        retry_after = _retry_after(exc)
        if retry_after is not None:
            return float(min(max(retry_after, 0.0), self.retry_after_cap_s))
        backoff = min(self.backoff_base_s * (2.0 ** (attempt - 1)), self.backoff_max_s)
        return backoff * (1 - 0.25 * random.random())

    async def aclose(self) -> None:
        """Close the underlying HTTP client."""
        await self._client.close()


def _reasoning(message: Any) -> str | None:
    """vLLM/DeepSeek put `reasoning_content` (others `reasoning`) on the message as an extra field."""
    extra: dict[str, Any] = getattr(message, "model_extra", None) or {}
    for key in ("reasoning_content", "reasoning"):
        value = extra.get(key)
        if value is None:
            value = getattr(message, key, None)
        if isinstance(value, str) and value.strip():
            return value
    return None


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
    """A safe one-line description: the error class and status, never the request body."""
    status = getattr(exc, "status_code", None)
    return f"{type(exc).__name__}" + (f" (HTTP {status})" if status else "")
