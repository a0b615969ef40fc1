"""Classifying a failed Slack call: every body shape the real client can meet gets a kind and a safe code, never a crash."""

from __future__ import annotations

from typing import Any

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack_errors import FailureKind, classify
from tests.fakes import slack_faults as faults
from tests.fakes.slack_faults import Injected
from tests.fakes.slack_server import FakeSlack

CASES: list[tuple[str, Injected, FailureKind, str]] = [
    ("json_channel", faults.json_error("channel_not_found"), FailureKind.CHANNEL, "channel_not_found"),
    ("json_not_in_channel", faults.json_error("not_in_channel"), FailureKind.CHANNEL, "not_in_channel"),
    ("json_blocks", faults.json_error("invalid_blocks"), FailureKind.MESSAGE, "invalid_blocks"),
    ("json_gone", faults.json_error("message_not_found"), FailureKind.MESSAGE, "message_not_found"),
    ("json_unknown", faults.json_error("some_new_code"), FailureKind.MESSAGE, "some_new_code"),
    ("json_500", faults.json_error("internal_error", 500), FailureKind.RETRYABLE, "internal_error"),
    ("ratelimited_429", faults.ratelimited(7), FailureKind.RETRYABLE, "ratelimited"),
    ("text_500", faults.text(500), FailureKind.RETRYABLE, "text_body"),
    ("text_200", faults.text(200), FailureKind.RETRYABLE, "AttributeError"),
    ("html_502", faults.html(502), FailureKind.RETRYABLE, "http_502"),
    ("html_200", faults.html(200), FailureKind.RETRYABLE, "non_json_body"),
    ("html_404", faults.html(404), FailureKind.MESSAGE, "http_404"),
    ("bad_json_500", faults.bad_json(500), FailureKind.RETRYABLE, "unparseable_body"),
    ("empty_500", faults.empty(500), FailureKind.RETRYABLE, "http_500"),
    ("empty_200", faults.empty(200), FailureKind.RETRYABLE, "empty_body"),
    ("reset", faults.reset(), FailureKind.RETRYABLE, "ServerDisconnectedError"),
]


@pytest.mark.parametrize(("fault", "kind", "code"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
async def test_each_answer_shape_is_classified(fake_slack: FakeSlack, fault: Injected, kind: FailureKind,
                                               code: str) -> None:
    """What the real SDK raises for each answer (JSON error, text, HTML, empty, reset) maps to a kind and a code."""
    client = AsyncWebClient(token="xoxb-test", base_url=fake_slack.api_url, retry_handlers=[])
    fake_slack.plan.inject("chat.postMessage", fault)
    with pytest.raises(Exception) as caught:  # noqa: PT011 - which exception depends on the body: that is the point
        await client.chat_postMessage(channel="C1", text="hi")
    failure = classify(caught.value)
    assert (failure.kind, failure.code) == (kind, code)
    if fault.retry_after is not None:
        assert failure.retry_after_s == fault.retry_after


class _Odd:
    """A response object of a shape nobody foresaw."""

    @property
    def data(self) -> Any:
        raise RuntimeError("boom")


@pytest.mark.parametrize("response", [None, "text", b"\x00", 42, {"error": "<b>x</b>"}, {"error": None}, _Odd()])
def test_odd_responses_never_raise(response: Any) -> None:
    """Whatever the SDK put in the error's response, classify answers and the code stays a safe token."""
    failure = classify(SlackApiError("failed", response))  # type: ignore[no-untyped-call]
    assert failure.kind in FailureKind
    assert failure.code.replace("_", "").isalnum()
