"""The checks, listed once: `diagbot check` and the start of `diagbot serve` run `config_checks`; readiness runs
`readiness_checks` against the running server's own clients. Add a check by adding a line here; a tool's checks come
from its toolset (core/tools/<tool>/toolset.py) through the registry."""

from __future__ import annotations

import redis.asyncio as aioredis
from sqlalchemy import text

from core.alerts.policy import check_alert_settings
from core.health.config import check_access_policy, check_model_settings, check_store_mode
from core.health.model import check_model_endpoint
from core.health.result import SLOW_CHECK_TIMEOUT_S, Check, CheckResult, Level, static
from core.health.schema import check_schema
from core.health.stores import check_database, check_redis
from core.netdiag import network_cause
from core.settings import Settings
from core.stores.sql.db import Database
from core.tools.registry import current_registry


def config_checks(settings: Settings, *, serving: bool) -> list[Check]:
    """Every setting and dependency the core uses. `serving`: a missing model is FATAL (serve needs one)."""
    return [
        Check("model.settings", static(check_model_settings(settings, required=serving))),
        # its own bound: importing the openai SDK (in a thread) takes seconds of CPU on a loaded machine
        Check("model.endpoint", lambda: check_model_endpoint(settings), failing=Level.WARN,
              timeout_s=SLOW_CHECK_TIMEOUT_S),
        Check("redis.mode", static(check_store_mode(settings))),
        Check("slack.access_policy", static(check_access_policy(settings))),
        Check("alerts", static(check_alert_settings(settings))),
        Check("redis", lambda: check_redis(settings)),
        Check("database", lambda: check_database(settings)),
        Check("database.schema", lambda: check_schema(settings)),
        *current_registry().checks(settings, readiness=False),  # each toolset's own (core/tools/<tool>/toolset.py)
    ]


async def _ping_redis(client: aioredis.Redis) -> CheckResult:
    try:
        await client.ping()
    except Exception as exc:
        return CheckResult(name="redis", level=Level.WARN, detail=f"PING failed: {network_cause(exc) or type(exc).__name__}",
                           fix="check that Redis (REDIS_URL) is up")
    return CheckResult(name="redis", level=Level.OK, detail="answers PING")


async def _select_one(database: Database) -> CheckResult:
    try:
        async with database.engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
    except Exception as exc:
        cause = network_cause(exc) or type(getattr(exc, "orig", None) or exc).__name__
        return CheckResult(name="database", level=Level.WARN, detail=f"SELECT 1 failed: {cause}",
                           fix="check that the database (DATABASE_URL) is up")
    return CheckResult(name="database", level=Level.OK, detail="answers SELECT 1")


def readiness_checks(settings: Settings, redis: aioredis.Redis | None, database: Database | None) -> list[Check]:
    """What /readyz probes: the server's Redis and database clients, the model endpoint, each tool backend."""
    checks = []
    if redis is not None:
        checks.append(Check("redis", lambda: _ping_redis(redis), failing=Level.WARN))
    if database is not None:
        checks.append(Check("database", lambda: _select_one(database), failing=Level.WARN))
    checks += [
        # its own bound: importing the openai SDK (in a thread) takes seconds of CPU on a loaded machine
        Check("model.endpoint", lambda: check_model_endpoint(settings), failing=Level.WARN,
              timeout_s=SLOW_CHECK_TIMEOUT_S),
        *current_registry().checks(settings, readiness=True),
    ]
    return checks
