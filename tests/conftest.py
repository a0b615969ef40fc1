"""Shared fixtures: real Redis, real SQL servers, and a guard that no test reaches a real model provider."""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
import redis.asyncio as aioredis

from core.llm.openai_model import refuse_remote_models
from core.observability.log_setup import CHATTY_LOGGERS
from tests.fixtures.prometheus import prometheus_server  # noqa: F401 - a shared fixture: a real Prometheus

REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
MARIADB_URL = os.environ.get("TEST_MARIADB_URL", "mysql+aiomysql://root@127.0.0.1:3306/test")
POSTGRES_URL = os.environ.get("TEST_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test")


@pytest.fixture(autouse=True, scope="session")
def _refuse_remote_models() -> None:
    """Like pydantic-ai's ALLOW_MODEL_REQUESTS = False: the model port refuses any non-loopback endpoint in tests."""
    refuse_remote_models()


@pytest.fixture(autouse=True)
def _no_real_model_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never reach a real provider: drop any credentials the developer's shell may carry."""
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "DIAG_MODEL", "DIAG_GUARD_MODEL", "SLACK_BOT_TOKEN",
                "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_API_URL", "REDIS_URL", "DATABASE_URL"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def key_prefix() -> str:
    """A unique Redis key prefix so tests sharing one Redis never see each other's keys."""
    return f"test:{uuid.uuid4().hex[:12]}:"


@pytest.fixture
async def redis_client(key_prefix: str) -> AsyncIterator[aioredis.Redis]:
    """A real Redis client; keys under the test's prefix are removed afterwards."""
    client = aioredis.from_url(REDIS_URL)
    try:
        await client.ping()
    except Exception as exc:  # pragma: no cover - environment problem, fail loudly
        pytest.fail(f"Redis not reachable at {REDIS_URL}: {exc}")
    yield client
    keys = [k async for k in client.scan_iter(match=f"{key_prefix}*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()


@pytest.fixture
def sqlite_url(tmp_path: os.PathLike[str]) -> str:
    """A fresh SQLite database file for the audit stores."""
    return f"sqlite+aiosqlite:///{tmp_path}/diag.db"


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """configure_logging changes process-wide logging; put the test runner's set-up back afterwards."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    chatty = {name: logging.getLogger(name).level for name in CHATTY_LOGGERS}
    yield
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)
    for name, old in chatty.items():
        logging.getLogger(name).setLevel(old)
