"""Checks of the Slack configuration for `diagbot check` and the start of `diagbot serve`: token types, the
signing secret in HTTP mode, auth.test with the bot token's scopes against manifest.yml, the app token."""

from __future__ import annotations

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.scopes import BOT_SCOPES, ESSENTIAL_SCOPES
from core.health.result import Check, CheckResult, Level, static
from core.netdiag import network_cause
from core.settings import Settings

SLACK_API_DEFAULT = "https://slack.com/api/"
_SLACK_SETUP = "see docs/slack-setup.md"


def _prefix(token: str) -> str:
    """The token type prefix only (xoxb-, xapp-, ...): never more of a secret."""
    head, dash, _ = token.partition("-")
    return f"{head[:5]}-" if dash else "no xox?-/xapp- prefix"


def check_token_types(settings: Settings, *, serving: bool, events: bool = True) -> CheckResult:
    """SLACK_BOT_TOKEN is xoxb-, SLACK_APP_TOKEN (Socket Mode) is xapp-, HTTP mode has SLACK_SIGNING_SECRET (only a
    process that takes events needs a way to receive them: `diagbot worker` only posts, with the bot token)."""
    bot = settings.slack_bot_token.get_secret_value() if settings.slack_bot_token else ""
    app = settings.slack_app_token.get_secret_value() if settings.slack_app_token else ""
    secret = settings.slack_signing_secret.get_secret_value() if settings.slack_signing_secret else ""
    if not (bot or app or secret):
        return CheckResult(name="slack.tokens", level=Level.FATAL if serving else Level.SKIP,
                           detail="Slack not configured: SLACK_BOT_TOKEN, SLACK_APP_TOKEN and SLACK_SIGNING_SECRET "
                                  "are unset" + ("" if serving else " (only diagbot serve needs them)"),
                           fix="set SLACK_BOT_TOKEN and SLACK_APP_TOKEN (Socket Mode) or SLACK_SIGNING_SECRET (HTTP "
                               f"mode); {_SLACK_SETUP}")
    problems: list[str] = []
    fixes: list[str] = []
    if not bot:
        problems.append("SLACK_BOT_TOKEN is unset")
        fixes.append("set SLACK_BOT_TOKEN to the Bot User OAuth Token (xoxb-...)")
    elif not bot.startswith("xoxb-"):
        problems.append(f"SLACK_BOT_TOKEN starts with {_prefix(bot)}, not xoxb-")
        fixes.append("SLACK_BOT_TOKEN must be the Bot User OAuth Token (OAuth & Permissions, xoxb-...)")
    if app and not app.startswith("xapp-"):
        problems.append(f"SLACK_APP_TOKEN starts with {_prefix(app)}, not xapp-")
        fixes.append("SLACK_APP_TOKEN must be an app-level token (Basic Information > App-Level Tokens, xapp-..., "
                     "scope connections:write); unset it for HTTP mode")
    if events and not app and not secret:
        problems.append("HTTP mode (SLACK_APP_TOKEN unset) without SLACK_SIGNING_SECRET: no request can be verified")
        fixes.append("set SLACK_SIGNING_SECRET (Basic Information > Signing Secret), or SLACK_APP_TOKEN for Socket Mode")
    if problems:
        return CheckResult(name="slack.tokens", level=Level.FATAL, detail="; ".join(problems), fix="; ".join(fixes))
    mode = ("Socket Mode (SLACK_APP_TOKEN)" if app else f"HTTP mode on port {settings.port} (signing secret set)"
            if events else "posting only (diagbot worker)")
    return CheckResult(name="slack.tokens", level=Level.OK, detail=f"bot token xoxb-, {mode}")


def _client(settings: Settings, token: str | None) -> AsyncWebClient:
    base_url = settings.slack_api_url or SLACK_API_DEFAULT
    # No retries: a check reports what it saw at once (the server's own client retries).
    return AsyncWebClient(token=token, base_url=base_url if base_url.endswith("/") else base_url + "/", timeout=3,
                          retry_handlers=[])


def _scopes_result(team: str, granted_header: str | None) -> CheckResult:
    if granted_header is None:
        return CheckResult(name="slack.auth", level=Level.OK, detail=f"auth.test ok ({team}); scopes not reported")
    granted = {s.strip() for s in granted_header.split(",") if s.strip()}
    missing = sorted(BOT_SCOPES - granted)
    if not missing:
        return CheckResult(name="slack.auth", level=Level.OK, detail=f"auth.test ok ({team}); every manifest scope granted")
    level = Level.FATAL if ESSENTIAL_SCOPES & set(missing) else Level.WARN
    return CheckResult(name="slack.auth", level=level, detail=f"auth.test ok ({team}) but the bot token lacks "
                       f"{', '.join(missing)} (manifest.yml requests them)",
                       fix="add the scopes under OAuth & Permissions (or re-create the app from manifest.yml) and "
                           "reinstall the app to the workspace")


async def check_bot_auth(settings: Settings) -> CheckResult:
    """auth.test with SLACK_BOT_TOKEN; its granted scopes (x-oauth-scopes) against the manifest's."""
    bot = settings.slack_bot_token.get_secret_value() if settings.slack_bot_token else ""
    if not bot.startswith("xoxb-"):
        return CheckResult(name="slack.auth", level=Level.SKIP, detail="no bot token to test")
    try:
        response = await _client(settings, bot).auth_test()
    except SlackApiError as exc:
        error = exc.response.get("error") if isinstance(exc.response.data, dict) else None
        return CheckResult(name="slack.auth", level=Level.FATAL, detail=f"auth.test refused the bot token "
                           f"({error or f'HTTP {exc.response.status_code}'})",
                           fix="copy the current Bot User OAuth Token (reinstall the app if it was revoked)")
    except Exception as exc:
        return CheckResult(name="slack.auth", level=Level.WARN,
                           detail=f"Slack API unreachable: {network_cause(exc) or type(exc).__name__}",
                           fix="check outbound HTTPS to slack.com (or SLACK_API_URL)")
    headers = {k.lower(): v for k, v in (response.headers or {}).items()}
    scopes = headers.get("x-oauth-scopes")
    team = str(response.get("team") or response.get("team_id") or "workspace")
    return _scopes_result(team, scopes if isinstance(scopes, str) else None)


async def check_app_token(settings: Settings) -> CheckResult:
    """apps.connections.open with SLACK_APP_TOKEN (Socket Mode): the token is live and has connections:write."""
    app = settings.slack_app_token.get_secret_value() if settings.slack_app_token else ""
    if not app.startswith("xapp-"):
        return CheckResult(name="slack.app_token", level=Level.SKIP, detail="no app-level token (HTTP mode)")
    try:
        await _client(settings, None).apps_connections_open(app_token=app)
    except SlackApiError as exc:
        error = exc.response.get("error") if isinstance(exc.response.data, dict) else None
        return CheckResult(name="slack.app_token", level=Level.FATAL,
                           detail=f"apps.connections.open refused SLACK_APP_TOKEN ({error or 'unknown error'})",
                           fix="create an app-level token with connections:write (Basic Information) and enable "
                               "Socket Mode")
    except Exception as exc:
        return CheckResult(name="slack.app_token", level=Level.WARN,
                           detail=f"Slack API unreachable: {network_cause(exc) or type(exc).__name__}",
                           fix="check outbound HTTPS to slack.com (or SLACK_API_URL)")
    return CheckResult(name="slack.app_token", level=Level.OK, detail="apps.connections.open ok (Socket Mode)")


def slack_checks(settings: Settings, *, serving: bool, events: bool = True) -> list[Check]:
    """The Slack checks, in the order they print (`events`: the process takes Slack events, i.e. not a worker)."""
    return [
        Check("slack.tokens", static(check_token_types(settings, serving=serving, events=events))),
        Check("slack.auth", lambda: check_bot_auth(settings), failing=Level.WARN),
        Check("slack.app_token", lambda: check_app_token(settings), failing=Level.WARN),
    ]
