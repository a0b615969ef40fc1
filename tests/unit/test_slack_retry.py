"""without_retries: a bare copy of the client, made once and made again when the client changed."""

from __future__ import annotations

from slack_sdk.http_retry.builtin_async_handlers import AsyncConnectionErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

from bot.outgoing import OutgoingRedaction, RedactingWebClient
from bot.slack_retry import without_retries


def test_bare_copy_has_no_retry_handlers_and_leaves_the_client_alone() -> None:
    client = AsyncWebClient(token="xoxb-1", retry_handlers=[AsyncConnectionErrorRetryHandler()])
    bare = without_retries(client)
    assert bare is not client
    assert bare.retry_handlers == []
    assert len(client.retry_handlers) == 1
    assert bare.token == "xoxb-1"
    assert bare.base_url == client.base_url


def test_bare_copy_is_reused_while_the_client_is_unchanged() -> None:
    client = AsyncWebClient(token="xoxb-1")
    assert without_retries(client) is without_retries(client)


def test_a_changed_client_gets_a_fresh_copy() -> None:
    client = AsyncWebClient(token="xoxb-1")
    first = without_retries(client)
    client.token = "xoxb-2"
    second = without_retries(client)
    assert second is not first
    assert second.token == "xoxb-2"
    assert without_retries(client) is second


def test_a_copy_changed_by_its_user_is_not_handed_out_again() -> None:
    client = AsyncWebClient(token="xoxb-1")
    first = without_retries(client)
    first.retry_handlers.append(AsyncConnectionErrorRetryHandler())
    assert without_retries(client) is not first
    first = without_retries(client)
    first.timeout = 1
    second = without_retries(client)
    assert second is not first
    assert second.timeout == client.timeout


def test_a_wrapper_that_took_over_the_clients_attributes_gets_a_copy_of_its_own_class() -> None:
    client = AsyncWebClient(token="xoxb-1")
    inner = without_retries(client)
    wrapped = RedactingWebClient.wrap(client, OutgoingRedaction())
    bare = without_retries(wrapped)
    assert bare is not inner
    assert type(bare) is type(wrapped)
    assert bare.retry_handlers == []
    assert without_retries(wrapped) is bare
