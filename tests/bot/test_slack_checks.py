"""The Slack checks of `diagbot check` / `diagbot serve`: token types, signing secret, auth.test and scopes,
the app token, against the local fake Slack Web API."""

from __future__ import annotations

import re

import pytest
from pydantic import SecretStr

from bot.scopes import BOT_SCOPES
from bot.slack_checks import check_app_token, check_bot_auth, check_token_types
from core.health.result import Level
from core.settings import Settings
from tests.fakes.slack_server import FakeSlack
from tests.paths import REPO_ROOT


def _manifest_bot_scopes() -> set[str]:
    """The `oauth_config.scopes.bot` list of manifest.yml (a plain YAML list; read line by line)."""
    lines = (REPO_ROOT / "manifest.yml").read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "bot:") + 1
    scopes = set()
    for line in lines[start:]:
        match = re.match(r"\s+- ([a-z_.:]+)", line)
        if not match:
            break
        scopes.add(match.group(1))
    return scopes


def test_the_checked_scopes_are_the_manifest_scopes() -> None:
    """BOT_SCOPES is exactly what manifest.yml requests (a scope added there must be added to bot/scopes.py)."""
    assert set(BOT_SCOPES) == _manifest_bot_scopes()


def _settings(**values: str) -> Settings:
    return Settings.model_validate({k: SecretStr(v) if k.startswith("slack_") and k != "slack_api_url" else v
                                    for k, v in values.items()})


@pytest.mark.parametrize(("values", "serving", "level", "says"), [
    ({}, False, Level.SKIP, "not configured"),
    ({}, True, Level.FATAL, "SLACK_BOT_TOKEN"),
    ({"slack_bot_token": "xoxb-1"}, True, Level.FATAL, "SLACK_SIGNING_SECRET"),
    ({"slack_bot_token": "xoxp-1", "slack_signing_secret": "s"}, True, Level.FATAL, "starts with xoxp-, not xoxb-"),
    ({"slack_bot_token": "xoxb-1", "slack_app_token": "xoxb-2"}, True, Level.FATAL, "SLACK_APP_TOKEN starts with xoxb-"),
    ({"slack_app_token": "xapp-1"}, False, Level.FATAL, "SLACK_BOT_TOKEN is unset"),
    ({"slack_bot_token": "xoxb-1", "slack_signing_secret": "s"}, True, Level.OK, "HTTP mode"),
    ({"slack_bot_token": "xoxb-1", "slack_app_token": "xapp-1"}, True, Level.OK, "Socket Mode"),
])
def test_token_types_and_mode(values: dict[str, str], serving: bool, level: Level, says: str) -> None:
    """Wrong token types, a missing signing secret in HTTP mode, a missing bot token are FATAL and named."""
    result = check_token_types(_settings(**values), serving=serving)
    assert result.level is level
    assert says in result.detail
    assert ("-> fix:" in result.line()) == (level is Level.FATAL)


def test_a_worker_needs_only_the_bot_token() -> None:
    """`diagbot worker` takes no events: no signing secret or app token is needed; a wrong bot token still is FATAL."""
    ok = check_token_types(_settings(slack_bot_token="xoxb-1"), serving=True, events=False)
    assert ok.level is Level.OK
    assert "posting only" in ok.detail
    bad = check_token_types(_settings(slack_bot_token="xoxp-1"), serving=True, events=False)
    assert bad.level is Level.FATAL


def test_every_problem_is_listed_at_once_without_the_secret() -> None:
    """Two wrong tokens and no signing secret: one line naming each problem, never more than the token prefix."""
    result = check_token_types(_settings(slack_bot_token="xapp-SECRET1", slack_app_token="xoxp-SECRET2"), serving=True)
    assert "SLACK_BOT_TOKEN starts with xapp-" in result.detail
    assert "SLACK_APP_TOKEN starts with xoxp-" in result.detail
    assert "SECRET" not in result.line()


async def test_auth_test_with_every_manifest_scope_is_ok(fake_slack: FakeSlack) -> None:
    """auth.test answers and the token has every manifest scope: ok."""
    fake_slack.oauth_scopes = ",".join(sorted(BOT_SCOPES | {"reactions:write"}))
    result = await check_bot_auth(_settings(slack_bot_token="xoxb-1", slack_api_url=fake_slack.api_url))
    assert result.level is Level.OK, result.line()
    assert fake_slack.calls_of("auth.test")


async def test_a_missing_essential_scope_is_fatal_and_another_a_warning(fake_slack: FakeSlack) -> None:
    """Without chat:write the bot cannot answer (FATAL); without channels:read only traces suffer (WARN)."""
    settings = _settings(slack_bot_token="xoxb-1", slack_api_url=fake_slack.api_url)
    fake_slack.oauth_scopes = ",".join(sorted(BOT_SCOPES - {"chat:write"}))
    result = await check_bot_auth(settings)
    assert result.level is Level.FATAL
    assert "chat:write" in result.detail
    assert "reinstall" in result.fix
    fake_slack.oauth_scopes = ",".join(sorted(BOT_SCOPES - {"channels:read"}))
    result = await check_bot_auth(settings)
    assert result.level is Level.WARN
    assert "channels:read" in result.detail


async def test_a_refused_bot_token_is_fatal_naming_slacks_error(fake_slack: FakeSlack) -> None:
    """auth.test answering invalid_auth: FATAL with the error code."""
    fake_slack.fail("auth.test", "invalid_auth")
    result = await check_bot_auth(_settings(slack_bot_token="xoxb-1", slack_api_url=fake_slack.api_url))
    assert result.level is Level.FATAL
    assert "invalid_auth" in result.detail


async def test_slack_unreachable_is_a_warning_naming_the_cause() -> None:
    """A closed port for the Slack API: a warning saying the connection was refused."""
    result = await check_bot_auth(_settings(slack_bot_token="xoxb-1", slack_api_url="http://127.0.0.1:9/api/"))
    assert result.level is Level.WARN
    assert "refused" in result.detail


async def test_the_app_token_is_tried_with_apps_connections_open(fake_slack: FakeSlack) -> None:
    """Socket Mode: apps.connections.open accepts the token (ok) or refuses it (FATAL naming the error)."""
    settings = _settings(slack_bot_token="xoxb-1", slack_app_token="xapp-1", slack_api_url=fake_slack.api_url)
    assert (await check_app_token(settings)).level is Level.OK
    fake_slack.fail("apps.connections.open", "not_allowed_token_type")
    result = await check_app_token(settings)
    assert result.level is Level.FATAL
    assert "not_allowed_token_type" in result.detail
