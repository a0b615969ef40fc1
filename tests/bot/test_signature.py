"""Request signatures: Slack's documented vector, and the app refusing bad or stale signatures with no run."""

from __future__ import annotations

import json
import time

import aiohttp
from slack_sdk.signature import SignatureVerifier

from tests.bot.conftest import Harness
from tests.bot.slack_requests import envelope, mention, sign

DOC_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
DOC_TIMESTAMP = 1531420618
DOC_BODY = (
    "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar"
    "&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com"
    "%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN"
    "&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
)
DOC_SIGNATURE = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"


def test_documented_vector_matches_our_signer_and_the_sdk_verifier() -> None:
    """Our test signer and slack_sdk's verifier agree with Slack's published example."""
    assert sign(DOC_SECRET, DOC_TIMESTAMP, DOC_BODY) == DOC_SIGNATURE
    verifier = SignatureVerifier(DOC_SECRET, clock=type("C", (), {"now": lambda self: DOC_TIMESTAMP + 10})())
    assert verifier.is_valid(DOC_BODY, str(DOC_TIMESTAMP), DOC_SIGNATURE)
    assert not verifier.is_valid(DOC_BODY + "x", str(DOC_TIMESTAMP), DOC_SIGNATURE)


async def test_bad_signature_is_401_and_starts_nothing(harness: Harness) -> None:
    """A request signed with another secret is refused before any listener runs."""
    body = json.dumps(envelope(mention(ts="1.1")))
    ts = int(time.time())
    status, _ = await harness.send.post(body, "application/json", timestamp=ts, signature=sign("wrong", ts, body))
    assert status == 401
    await harness.settle()
    assert harness.chat.turns == []
    assert harness.slack.calls_of("chat.postMessage") == []


async def test_stale_timestamp_is_401_and_starts_nothing(harness: Harness) -> None:
    """A correctly signed request older than 5 minutes (a replay) is refused."""
    status, _ = await harness.send.event(mention(ts="1.2"), timestamp=int(time.time()) - 600)
    assert status == 401
    await harness.settle()
    assert harness.chat.turns == []


async def test_missing_signature_headers_is_401(harness: Harness) -> None:
    """No signature headers at all is refused."""
    async with harness.send.session.post(harness.send.url, data=b"{}", headers={"Content-Type": "application/json"}) as r:
        assert r.status == 401
    assert harness.chat.turns == []


async def test_healthz_answers_ok(harness: Harness) -> None:
    """GET /healthz is served next to /slack/events."""
    url = harness.send.url.replace("/slack/events", "/healthz")
    async with aiohttp.ClientSession() as s, s.get(url) as r:
        assert r.status == 200
        assert await r.json() == {"ok": True}


async def test_url_verification_challenge_is_echoed(harness: Harness) -> None:
    """Slack's URL verification handshake works on the signed endpoint."""
    body = json.dumps({"token": "x", "challenge": "abc123", "type": "url_verification"})
    status, text = await harness.send.post(body, "application/json")
    assert status == 200
    assert "abc123" in text
