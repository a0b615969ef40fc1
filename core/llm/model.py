"""The model port: what the agent, guards and router are typed against (SPEC §11 wire formats)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class ModelUnavailable(Exception):
    """The model endpoint could not give an answer (transport, timeout, 5xx/429 after bounded retries)."""

    def __init__(self, message: str, *, status_code: int | None = None, attempts: int = 1) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.attempts = attempts


class ModelToolCall(BaseModel):
    """One function call as the provider sent it; id may be missing or repeated (vLLM/Ollama)."""

    id: str | None = None
    name: str
    arguments: str = Field(default="", description="The raw JSON text of the arguments, not yet decoded.")


class ModelUsage(BaseModel):
    """Token counts reported by the provider (zero when not reported)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class ModelReply(BaseModel):
    """One assistant message of a chat completion."""

    content: str | None = None
    tool_calls: list[ModelToolCall] = Field(default_factory=list)
    reasoning: str | None = Field(default=None, description="Provider reasoning; audit only, never used for decisions.")
    finish_reason: str | None = None
    usage: ModelUsage = Field(default_factory=ModelUsage)
    calls_from_text: str | None = Field(
        default=None, description="The format the tool calls were written in when they came in the content, not as "
        "native tool_calls (core/llm/text_calls.py); None for native calls or none.")
