"""Check of the model endpoint: it answers models.list, and DIAG_MODEL / DIAG_GUARD_MODEL are listed when it lists."""

from __future__ import annotations

import asyncio
import importlib
from typing import TYPE_CHECKING

from core.health.result import CheckResult, Level
from core.health.urls import display_url
from core.netdiag import network_cause
from core.settings import Settings

if TYPE_CHECKING:
    import openai

OPENAI_DEFAULT_URL = "https://api.openai.com/v1"


async def list_models(client: openai.AsyncOpenAI, timeout_s: float) -> list[str]:
    """The model ids the endpoint lists (one request, no retries)."""
    page = await client.with_options(timeout=timeout_s, max_retries=0).models.list()
    return [m.id for m in page.data]


def _failure(shown: str, exc: Exception) -> CheckResult:
    status = getattr(exc, "status_code", None)
    if status in (401, 403):
        return CheckResult(name="model.endpoint", level=Level.FATAL, detail=f"{shown}: the API key was refused "
                           f"(HTTP {status})", fix="set OPENAI_API_KEY to a key this endpoint accepts")
    if status == 404:  # some servers do not implement models.list: reachable is all we can say
        return CheckResult(name="model.endpoint", level=Level.OK, detail=f"{shown} answers (models.list not supported)")
    cause = network_cause(exc) or (f"HTTP {status}" if status else type(exc).__name__)
    return CheckResult(name="model.endpoint", level=Level.WARN, detail=f"{shown}: {cause}",
                       fix="check OPENAI_BASE_URL and that the model server is running and reachable from here")


def _listed(shown: str, wanted: dict[str, str], listed: list[str]) -> CheckResult:
    missing = [f"{var}={name}" for var, name in wanted.items() if name not in listed]
    if missing:
        sample = ", ".join(listed[:8]) + (" ..." if len(listed) > 8 else "")
        return CheckResult(name="model.endpoint", level=Level.WARN,
                           detail=f"{shown} does not list {', '.join(missing)} (it lists {sample or 'nothing'})",
                           fix="set DIAG_MODEL / DIAG_GUARD_MODEL to a model the endpoint serves")
    return CheckResult(name="model.endpoint", level=Level.OK,
                       detail=f"{shown} lists {', '.join(sorted(set(wanted.values())))}")


async def check_model_endpoint(settings: Settings, timeout_s: float = 2.5) -> CheckResult:
    """models.list against the configured endpoint; SKIP when no endpoint is configured."""
    if not (settings.openai_base_url or settings.openai_api_key):
        return CheckResult(name="model.endpoint", level=Level.SKIP, detail="no endpoint configured")
    # Seconds of CPU to import, and only needed when an endpoint is configured: in a worker thread, so the other
    # start-up checks running beside this one (Redis, the database) are not starved past their time bound on a
    # loaded machine (which made `diagbot serve` refuse to start with "redis: no answer within 3 s").
    sdk = await asyncio.to_thread(importlib.import_module, "openai")

    shown = display_url(settings.openai_base_url or OPENAI_DEFAULT_URL)
    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else "unused"
    client = sdk.AsyncOpenAI(base_url=settings.openai_base_url, api_key=key, max_retries=0)
    try:
        listed = await list_models(client, timeout_s)
    except sdk.OpenAIError as exc:
        return _failure(shown, exc)
    finally:
        await client.close()
    wanted = {var: name for var, name in (("DIAG_MODEL", settings.diag_model),
                                          ("DIAG_GUARD_MODEL", settings.diag_guard_model)) if name}
    return _listed(shown, wanted, listed)
