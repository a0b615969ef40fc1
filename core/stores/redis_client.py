"""The one Redis client every store of a process shares (canonical records, KV, the turn queue)."""

from __future__ import annotations

from importlib import metadata

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.driver_info import DriverInfo
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from core.stores.redis_pool import BoundedPool, LeanConnection

REDIS_MAX_CONNECTIONS = 1000  # DIAG_WORKER_CONCURRENCY's maximum


def redis_client_from_url(url: str) -> aioredis.Redis:
    """A Redis client that reports an outage within about a second (two quick retries) instead of stalling a run:
    the store then raises StoreUnavailable and the run ends in a clear ERROR/FAILURE.

    Its pool holds as many connections as DIAG_WORKER_CONCURRENCY allows runs (a run holds one through its event
    loop's lag, which is long in a busy process) and beyond that waits up to the socket timeout for a free one:
    redis-py 8's default pool (100, then MaxConnectionsError at once) failed turns whenever a process ran more than
    about a hundred at a time.

    The driver info is resolved once here: left to redis-py, every new connection reads the package's metadata
    (importlib.metadata, an email-header parse) for CLIENT SETINFO — a few ms each, most of a busy worker's CPU
    while its pool grows under a burst of runs.

    The pool and plain TCP connections are the lighter ones of core/stores/redis_pool.py (same bound and timeouts,
    about half the CPU per command); TLS and Unix-socket URLs keep redis-py's own connection classes."""
    pool = BoundedPool.from_url(
        url,
        max_connections=REDIS_MAX_CONNECTIONS,
        timeout=2.0,
        socket_connect_timeout=1.0,
        socket_timeout=2.0,
        retry=Retry(ExponentialBackoff(cap=0.2, base=0.05), retries=2),
        retry_on_error=[RedisConnectionError, RedisTimeoutError],
        health_check_interval=30,
        driver_info=DriverInfo(name="redis-py", lib_version=metadata.version("redis")),
    )
    if pool.connection_class is aioredis.Connection:
        pool.connection_class = LeanConnection
    return aioredis.Redis.from_pool(pool)  # the client owns the pool: aclose() closes its connections
