"""The last pass over everything bot/ sends to Slack: every string of the payload is redacted (SPEC §3.1, §10).

Reports, fallbacks, knowledge answers, chat replies, progress edits and command answers all leave through one of two
doors: the Web API client (`RedactingWebClient.api_call`, under every chat.* / views.* method) or Bolt's `respond()`
to a response_url (`RedactingRespond`, installed for every request by `install_respond_redaction`). Both call
`OutgoingRedaction.scrub`, so no renderer needs to remember it and no path bypasses it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.async_app import AsyncApp, AsyncBoltContext
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse
from slack_sdk.webhook import WebhookResponse

from core.evidence.redaction import Redactor

# Methods that carry text people read (messages, streams, views, assistant titles, status and prompts); the others
# (conversations.members, auth.test...) carry ids and cursors only.
_CONTENT_METHODS = ("chat.", "views.", "files.", "assistant.")


class OutgoingRedaction:
    """Redacts every string of an outgoing Slack payload (text, blocks, metadata), recursively."""

    def __init__(self, redactor: Redactor | None = None) -> None:
        self._redactor = redactor or Redactor()

    def scrub(self, value: Any) -> Any:
        """The payload with secrets in every string replaced (mappings and lists rebuilt, other values kept)."""
        kind = type(value)  # the exact JSON types first: a report's blocks are hundreds of them
        if kind is str:
            return self._redactor.redact(value)
        if kind is dict:
            return {key: self.scrub(item) for key, item in value.items()}
        if kind is list:
            return [self.scrub(item) for item in value]
        if kind is int or kind is bool or kind is float or value is None:
            return value
        if isinstance(value, str):
            return self._redactor.redact(value)
        if isinstance(value, dict):
            return {key: self.scrub(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.scrub(item) for item in value]
        return value


class RedactingWebClient(AsyncWebClient):
    """An AsyncWebClient whose content-carrying calls pass through `OutgoingRedaction.scrub` first.

    `wrap` gives any client (plain, metered...) this behaviour by a subclass of its own class, so the other
    overrides in its chain (metering) still run, after the scrub."""

    outgoing: OutgoingRedaction

    @classmethod
    def wrap(cls, client: AsyncWebClient, outgoing: OutgoingRedaction) -> AsyncWebClient:
        """The same client (token, base URL, session, retry handlers, class) with redaction; a wrapped one is reused."""
        if isinstance(client, RedactingWebClient):
            return client
        kind = type(client)
        redacting: type[RedactingWebClient] = type(f"Redacting{kind.__name__}", (cls, kind), {})
        wrapped = object.__new__(redacting)
        wrapped.__dict__.update(client.__dict__)
        wrapped.outgoing = outgoing
        return wrapped

    async def api_call(self, api_method: str, **kwargs: Any) -> AsyncSlackResponse:
        """Scrub the payload of content methods, then call Slack as the wrapped client's class does."""
        if api_method.startswith(_CONTENT_METHODS):
            for name in ("json", "data", "params"):
                if isinstance(kwargs.get(name), dict):
                    kwargs[name] = self.outgoing.scrub(kwargs[name])
        return await super().api_call(api_method, **kwargs)


class RedactingRespond(AsyncRespond):
    """Bolt's respond() with the message scrubbed before it goes to the response_url."""

    def __init__(self, inner: AsyncRespond, outgoing: OutgoingRedaction) -> None:
        super().__init__(response_url=inner.response_url, proxy=inner.proxy, ssl=inner.ssl)
        self._outgoing = outgoing

    async def __call__(self, text: str | dict[str, Any] = "", **kwargs: Any) -> WebhookResponse:  # type: ignore[override]
        """Send the scrubbed message (same arguments as AsyncRespond)."""
        return await super().__call__(self._outgoing.scrub(text), **self._outgoing.scrub(kwargs))


def install_respond_redaction(app: AsyncApp, outgoing: OutgoingRedaction) -> None:
    """A global middleware: every listener's `respond` is the redacting one (Bolt passes `next` by name)."""

    async def redact_respond(context: AsyncBoltContext, next: Callable[[], Awaitable[None]]) -> None:
        inner = context.respond
        if inner is not None and not isinstance(inner, RedactingRespond):
            context["respond"] = RedactingRespond(inner, outgoing)
        await next()

    app.use(redact_respond)
