"""Checks of the settings alone (no network): the model configuration and the store mode."""

from __future__ import annotations

from core.health.result import CheckResult, Level
from core.settings import Settings

MODEL_FIX = ("set OPENAI_BASE_URL (your OpenAI-compatible endpoint, e.g. http://localhost:11434/v1) or OPENAI_API_KEY "
             "(OpenAI itself), and DIAG_MODEL (the model name)")


def check_model_settings(settings: Settings, *, required: bool) -> CheckResult:
    """DIAG_MODEL and an endpoint are both set, naming whichever is missing; unset entirely is SKIP unless required."""
    has_model = bool(settings.diag_model)
    has_endpoint = bool(settings.openai_base_url or settings.openai_api_key)
    if has_model and has_endpoint:
        guard = f", guard model {settings.guard_model}" if settings.diag_guard_model else ""
        return CheckResult(name="model.settings", level=Level.OK, detail=f"model {settings.diag_model}{guard}")
    if not has_model and not has_endpoint:
        level = Level.FATAL if required else Level.SKIP
        return CheckResult(name="model.settings", level=level,
                           detail="no model configured: DIAG_MODEL and OPENAI_BASE_URL/OPENAI_API_KEY are unset"
                           + ("" if required else " (diagbot ask and serve need them; diagbot demo does not)"),
                           fix=MODEL_FIX)
    missing = "DIAG_MODEL" if not has_model else "OPENAI_BASE_URL (or OPENAI_API_KEY for OpenAI itself)"
    return CheckResult(name="model.settings", level=Level.FATAL, detail=f"{missing} is unset", fix=MODEL_FIX)


def check_store_mode(settings: Settings) -> CheckResult:
    """REDIS_URL unset means in-process stores: fine for one process only (the warning belongs to serving)."""
    if settings.redis_url:
        return CheckResult(name="redis.mode", level=Level.OK, detail="shared stores in Redis (REDIS_URL)")
    return CheckResult(name="redis.mode", level=Level.WARN,
                       detail="REDIS_URL unset: tool records, dedup, locks and cancel flags are in-process "
                              "(one process only)",
                       fix="set REDIS_URL before running more than one diagbot process")


def check_access_policy(settings: Settings) -> CheckResult:
    """Who may ask (DIAG_ALLOWED_CHANNELS, DIAG_DM_USERS, DIAG_ALLOW_GUESTS), in one line."""
    return CheckResult(name="slack.access_policy", level=Level.OK, detail=settings.access_policy.describe())
