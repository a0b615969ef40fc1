"""Real `diagbot serve` / `diagbot worker` processes sharing one Redis and one PostgreSQL database, in HTTP mode,
against the fake Slack Web API and a fake OpenAI-compatible server that answer from this process.

Used by tests/e2e (kill -9, SIGTERM) and bench/bench_reliability.py. The model answers every router call with
`CHAT` (a one-call turn) after a delay the test chooses from the question's text, so a test controls how long each
run stays in flight.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import redis.asyncio as aioredis

from testkit.openai_server import FakeOpenAIServer
from tests.bot.slack_requests import SECRET, SlackSender
from tests.fakes.slack_server import FakeSlack

REPO = Path(__file__).resolve().parents[2]
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
START_TIMEOUT_S = 60.0
RUNNER = "from entrypoints.cli import main; raise SystemExit(main())"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def question_text(request: dict[str, Any]) -> str:
    """The user's words in a model request."""
    return " ".join(str(m.get("content") or "") for m in request.get("messages", []) if m.get("role") == "user")


def question_delay(request: dict[str, Any], again: bool = False) -> float:
    """The run's model delay, from `delay=<seconds>` in the user's question (default 0.2 s); for a question asked
    before (a re-run), from `redo=<seconds>` when present."""
    found = 0.2
    for word in question_text(request).split():
        for key in ("delay=", "redo=") if again else ("delay=",):
            if word.startswith(key):
                with contextlib.suppress(ValueError):
                    found = float(word.removeprefix(key))
    return found


class ChatModel:
    """The fake model's script: every request answered CHAT after the question's delay; counts requests."""

    def __init__(self, server: FakeOpenAIServer) -> None:
        self.server = server
        self.calls = 0
        self.delays_seen: list[float] = []
        self._questions: set[str] = set()

    def entry(self, request: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        self.server.push(self.entry)  # never exhausted
        question = question_text(request)
        delay = question_delay(request, again=question in self._questions)
        self._questions.add(question)
        self.delays_seen.append(delay)
        return {"content": "CHAT", "delay_s": delay}


@dataclass
class Replica:
    """One diagbot process."""

    name: str
    port: int
    proc: asyncio.subprocess.Process
    log_path: Path

    @property
    def events_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/slack/events"

    def kill(self) -> None:
        """kill -9: no shutdown code runs."""
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        """SIGTERM: a deploy."""
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signal.SIGTERM)

    async def wait(self, timeout_s: float = 60.0) -> int:
        return await asyncio.wait_for(self.proc.wait(), timeout_s)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@dataclass
class Cluster:
    """The shared services, the fakes, and the processes started so far."""

    slack: FakeSlack
    model: FakeOpenAIServer
    chat_model: ChatModel
    redis: aioredis.Redis
    database_url: str
    redis_prefix: str
    workdir: Path
    http: aiohttp.ClientSession
    env_extra: dict[str, str] = field(default_factory=dict)
    replicas: list[Replica] = field(default_factory=list)
    redis_url: str = REDIS_URL

    def env(self, port: int, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DIAG_", "SLACK_", "OPENAI_"))}
        env.update({
            "PYTHONPATH": str(REPO), "REDIS_URL": self.redis_url, "DIAG_REDIS_PREFIX": self.redis_prefix,
            "DATABASE_URL": self.database_url,
            "SLACK_BOT_TOKEN": "xoxb-cluster", "SLACK_SIGNING_SECRET": SECRET, "SLACK_API_URL": self.slack.api_url,
            "OPENAI_BASE_URL": self.model.base_url, "OPENAI_API_KEY": "sk-local", "DIAG_MODEL": "fake-model",
            "DIAG_SLACK_STREAMING": "false", "DIAG_ROUTER_TIMEOUT_S": "60", "DIAG_AUTO_MIGRATE": "1",
            "DIAG_QUEUE_CLAIM_AFTER_S": "3", "DIAG_SHUTDOWN_GRACE_S": "5", "PORT": str(port),
            "DIAG_LOG_FORMAT": "text",
        })
        env.update(self.env_extra)
        env.update(extra)
        return env

    async def start(self, name: str, command: str = "serve", **extra: str) -> Replica:
        """Start one process and wait until it answers /healthz."""
        port = free_port()
        log_path = self.workdir / f"{name}.log"
        out = log_path.open("ab")
        proc = await asyncio.create_subprocess_exec(sys.executable, "-c", RUNNER, command, env=self.env(port, **extra),
                                                    cwd=self.workdir, stdout=out, stderr=out)
        out.close()
        replica = Replica(name, port, proc, log_path)
        self.replicas.append(replica)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if proc.returncode is not None:
                raise RuntimeError(f"{name} exited {proc.returncode}:\n{replica.log()[-3000:]}")
            with contextlib.suppress(aiohttp.ClientError, OSError):
                async with self.http.get(f"http://127.0.0.1:{port}/healthz") as resp:
                    if resp.status == 200:
                        return replica
            await asyncio.sleep(0.2)  # a process starting up: nothing to wait on but its port
        replica.kill()
        raise RuntimeError(f"{name} did not come up within {START_TIMEOUT_S} s:\n{replica.log()[-3000:]}")

    def sender(self, replica: Replica) -> SlackSender:
        return SlackSender(self.http, replica.events_url)

    def finals(self, thread_ts: str, channel: str = "C1") -> list[dict[str, Any]]:
        return self.slack.finals(channel, thread_ts)

    async def until(self, check: Callable[[], bool], timeout_s: float, what: str) -> float:
        """Wait for `check`; seconds waited (AssertionError naming `what` on timeout)."""
        started = time.monotonic()
        while not check():
            if time.monotonic() - started > timeout_s:
                logs = "\n".join(f"--- {r.name}\n{r.log()[-2000:]}" for r in self.replicas)
                raise AssertionError(f"timed out after {timeout_s} s waiting for {what}\n{logs}")
            await asyncio.sleep(0.05)  # the fake Slack records calls; there is no event per edit to wait on
        return time.monotonic() - started

    async def aclose(self) -> None:
        for replica in self.replicas:
            replica.kill()
        for replica in self.replicas:
            with contextlib.suppress(Exception):
                await replica.wait(10)


@contextlib.asynccontextmanager
async def cluster(workdir: Path, database_url: str, redis_url: str = REDIS_URL,
                  **env_extra: str) -> AsyncIterator[Cluster]:
    """Fakes started; the processes' Redis keys under a prefix of their own (removed at the end); every process
    killed at the end."""
    prefix = f"cluster:{uuid.uuid4().hex[:10]}:"
    redis = aioredis.from_url(redis_url)
    slack = await FakeSlack(members={"C1": ["U1", "U2"]}).start()
    model = FakeOpenAIServer()
    chat_model = ChatModel(model)
    model.push(chat_model.entry)
    await model.start()
    async with aiohttp.ClientSession() as http:
        c = Cluster(slack, model, chat_model, redis, database_url, prefix, workdir, http, dict(env_extra),
                    redis_url=redis_url)
        try:
            yield c
        finally:
            await c.aclose()
            await model.stop()
            await slack.aclose()
            keys = [k async for k in redis.scan_iter(match=f"{prefix}*", count=1000)]
            for i in range(0, len(keys), 500):
                await redis.delete(*keys[i:i + 500])
            await redis.aclose()
