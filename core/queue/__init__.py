"""Turn jobs: a durable queue on Redis Streams (several processes), or in this process without REDIS_URL."""
