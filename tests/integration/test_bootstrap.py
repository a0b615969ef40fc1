"""The one wiring place: what it builds from settings alone."""

from __future__ import annotations

import asyncio
import importlib.metadata
import logging
from pathlib import Path

import pytest

from core.bootstrap import build_services
from core.settings import Settings
from core.stores.canonical import InMemoryCanonicalStore, RedisCanonicalStore
from core.stores.redis_client import REDIS_MAX_CONNECTIONS, redis_client_from_url
from tests.conftest import REDIS_URL


async def test_without_redis_url_stores_are_in_process_and_one_shot_commands_stay_quiet(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """REDIS_URL unset: in-process canonical store, and no warning from building the services (a one-shot command
    runs in one process; serve and check say it instead, see tests/integration/test_check.py)."""
    with caplog.at_level(logging.WARNING):
        services = await build_services(Settings(database_url=f"sqlite:///{tmp_path}/d.db"))
    try:
        assert isinstance(services.canonical, InMemoryCanonicalStore)
        assert not [r for r in caplog.records if "REDIS_URL" in r.getMessage()]
    finally:
        await services.aclose()


async def test_with_redis_url_the_canonical_store_is_redis(tmp_path: Path) -> None:
    """REDIS_URL set: canonical records live in Redis, and a record written there is read back."""
    services = await build_services(Settings(redis_url=REDIS_URL, database_url=f"sqlite:///{tmp_path}/d.db"))
    try:
        assert isinstance(services.canonical, RedisCanonicalStore)
        assert await services.canonical.get_many("run_missing", ["call_x"]) == {"call_x": None}
    finally:
        await services.aclose()


async def test_a_bad_setting_found_late_fails_clearly_and_closes_what_was_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both log backends set: build_services raises the clear error, after closing the database it had opened."""
    from core.stores.sql.db import Database

    disposed: list[str] = []
    real_dispose = Database.dispose

    async def dispose(self: Database) -> None:
        disposed.append(self.url)
        await real_dispose(self)

    monkeypatch.setattr(Database, "dispose", dispose)
    settings = Settings(database_url=f"sqlite:///{tmp_path}/d.db", diag_loki_url="http://loki:3100",
                        diag_es_url="http://es:9200")
    with pytest.raises(ValueError, match="exactly one log backend"):
        await build_services(settings)
    assert len(disposed) == 1


async def test_aclose_closes_each_resource_once_and_survives_a_failing_closer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """aclose() disposes the database once however often it is called, and a closer that fails is only logged."""
    from core.stores.sql.db import Database

    disposed: list[str] = []
    real_dispose = Database.dispose

    async def dispose(self: Database) -> None:
        disposed.append(self.url)
        await real_dispose(self)
        raise RuntimeError("already gone")

    monkeypatch.setattr(Database, "dispose", dispose)
    services = await build_services(Settings(database_url=f"sqlite:///{tmp_path}/d.db"))
    await services.aclose()
    await services.aclose()
    assert len(disposed) == 1


async def test_the_redis_client_queues_a_burst_beyond_its_pool_instead_of_failing(key_prefix: str) -> None:
    """Hundreds of runs in one process (DIAG_WORKER_CONCURRENCY) each call Redis at once: with redis-py 8's default
    pool the 101st concurrent call raised MaxConnectionsError, failing turn jobs until a take-over 30 s later."""
    client = redis_client_from_url(REDIS_URL)
    burst = REDIS_MAX_CONNECTIONS + 200  # beyond the pool too: those wait for a free connection
    try:
        values = await asyncio.gather(*(client.get(f"{key_prefix}burst:{i}") for i in range(burst)))
        assert values == [None] * burst
    finally:
        await client.aclose()


async def test_new_redis_connections_do_not_read_package_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    """redis-py resolves its version for CLIENT SETINFO on every new connection unless told: importlib.metadata
    per connection was most of a worker's CPU while its pool grew under a burst of runs."""
    client = redis_client_from_url(REDIS_URL)
    lookups: list[str] = []
    real_version = importlib.metadata.version
    def counted(name: str) -> str:
        lookups.append(name)
        return real_version(name)

    monkeypatch.setattr(importlib.metadata, "version", counted)
    try:
        await asyncio.gather(*(client.blpop(f"nothing:{i}", timeout=0.05) for i in range(20)))  # 20 connections
        assert lookups == []
    finally:
        await client.aclose()
