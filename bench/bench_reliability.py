"""Reliability across two real `diagbot serve` processes: every user message answered exactly once.

Two `diagbot serve` processes in HTTP mode share one Redis database and one fresh PostgreSQL database
(tests/fakes/cluster.py), against the fake Slack Web API and a fake OpenAI-compatible model answering each turn
after the `delay=<s>` its question carries (0.2-1 s, random). The bench sends user messages open-loop:

- mentions starting a new thread (`app_mention`);
- mentions inside a thread (a person's thread or one the bot answered), delivered twice as Slack does, as
  `app_mention` and as `message` with the same ts;
- follow-ups: a plain `message` in a thread the bot has answered;

each delivery with 0-3 Slack retries (`X-Slack-Retry-Num`, same event_id) sent to either process at random, some at
the same moment as the first delivery, some seconds later, some 20-70 s late (`--late-s`). A delivery refused
because its process is down is retried on the other, as Slack retries an unacknowledged event. Midway one process
is killed with kill -9 and started again.

A final message is attributed to its user message by the run id in its `diag_run_finished` metadata (the runs
table's query carries the message's tag; the queue's run→job record otherwise). Prints messages, deliveries, runs
started, answers, duplicates, lost, answer latency and ack latency with the goals next to them.

    python bench/bench_reliability.py [--messages 1000] [--rate 6] [--late-s 20:70] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import create_async_engine

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.bot.slack_requests import SlackSender, mention, message
from tests.fakes.cluster import Cluster, Replica, cluster
from tests.sql_databases import empty_database

CHANNEL = "C1"
EVENT_TYPE = "diag_run_finished"
ACK_GOAL_MS = 50.0


@dataclass
class UserMessage:
    """One message a person wrote, and everything the bench sent and saw for it."""

    tag: str
    kind: str  # mention | thread_mention | follow_up
    ts: str
    thread_ts: str
    text: str
    first_sent: float = 0.0
    deliveries: int = 0


@dataclass
class Stats:
    """What the sender measured."""

    acks_ms: list[float] = field(default_factory=list)
    refused: int = 0  # deliveries to a process that was down (re-sent to the other as a Slack retry)
    non_200: Counter[int] = field(default_factory=Counter)
    late_retries: int = 0
    concurrent_retries: int = 0
    loop_lag_ms: list[float] = field(default_factory=list)
    acks_by_phase: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    acks_by_process: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))


class FinalWatch:
    """Wraps the fake Slack's chat.postMessage / chat.update: when each message first became a final one."""

    def __init__(self, c: Cluster) -> None:
        self.first_final: dict[str, float] = {}  # message ts -> when it first carried final metadata
        self.thread_finals: dict[str, set[str]] = defaultdict(set)
        slack: Any = c.slack
        self._slack = slack
        for name in ("_m_chat_postMessage", "_m_chat_update"):
            setattr(slack, name, self._wrap(getattr(slack, name)))

    def _wrap(self, handler: Callable[[dict[str, Any]], dict[str, Any]]) -> Callable[[dict[str, Any]], dict[str, Any]]:
        def wrapped(params: dict[str, Any]) -> dict[str, Any]:
            result = handler(params)
            if result.get("ok") and (params.get("metadata") or {}).get("event_type") == EVENT_TYPE:
                ts = str(result.get("ts") or params.get("ts"))
                stored = self._slack.messages.get((params.get("channel"), ts)) or {}
                thread_ts = stored.get("thread_ts")
                if ts not in self.first_final:
                    self.first_final[ts] = time.monotonic()
                if thread_ts:
                    self.thread_finals[str(thread_ts)].add(ts)
            return result

        return wrapped

    def answered_threads(self) -> list[str]:
        return [t for t, finals in self.thread_finals.items() if finals]


def pct(values: list[float], p: float) -> float:
    """Percentile by nearest rank (nan when empty)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def span(text: str) -> tuple[float, float]:
    low, _, high = text.partition(":")
    return float(low), float(high or low)


class Bench:
    """The sender: plans user messages, delivers them with retries to the live processes, kills one midway."""

    def __init__(self, c: Cluster, args: argparse.Namespace, rng: random.Random) -> None:
        self.c = c
        self.args = args
        self.rng = rng
        self.watch = FinalWatch(c)
        self.stats = Stats()
        self.messages: list[UserMessage] = []
        self.live: list[Replica] = []
        self.tasks: set[asyncio.Task[None]] = set()
        self._event_ids = 0
        self._ts = 0
        self.kill_at: float | None = None
        self.restarted_at: float | None = None
        self.sent_at = 0.0

    def new_ts(self) -> str:
        self._ts += 1
        return f"{1800000000 + self._ts}.{self._ts % 1_000_000:06d}"

    def phase(self) -> str:
        """Where the run is: before the kill, while the killed process is down or starting, or after."""
        if self.kill_at is None:
            return "before the kill"
        if self.restarted_at is None:
            return "kill to restart"
        return "after the restart"

    def event_id(self) -> str:
        self._event_ids += 1
        return f"EvR{self._event_ids:07d}"

    def plan(self, n: int) -> UserMessage:
        """The n-th user message: its kind, thread and text (follow-ups only into threads already answered)."""
        roll = self.rng.random()
        answered = self.watch.answered_threads()
        low, high = span(self.args.delay)
        delay = round(self.rng.uniform(low, high), 2)
        tag = f"q{n:05d}"
        ts = self.new_ts()
        if roll < 0.4 and answered:
            thread = self.rng.choice(answered)
            return UserMessage(tag, "follow_up", ts, thread, f"{tag} delay={delay} and what about the pool?")
        if roll < 0.6:
            thread = self.rng.choice(answered) if answered and self.rng.random() < 0.5 else self.new_ts()
            return UserMessage(tag, "thread_mention", ts, thread, f"<@UBOT> {tag} delay={delay} is this related?")
        return UserMessage(tag, "mention", ts, ts, f"<@UBOT> {tag} delay={delay} why is order-service failing?")

    def events(self, msg: UserMessage) -> list[dict[str, Any]]:
        """The events Slack sends for this message (a mention inside a thread comes twice, same ts)."""
        thread = None if msg.kind == "mention" else msg.thread_ts
        if msg.kind == "follow_up":
            return [message(msg.text, ts=msg.ts, thread_ts=thread, channel=CHANNEL)]
        events = [mention(msg.text, ts=msg.ts, thread_ts=thread, channel=CHANNEL)]
        if msg.kind == "thread_mention":
            events.append(message(msg.text, ts=msg.ts, thread_ts=thread, channel=CHANNEL))
        return events

    async def deliver(self, msg: UserMessage, event: dict[str, Any], event_id: str, retry: int) -> None:
        """One HTTP delivery to a random live process; refused (process down) → a Slack retry to another."""
        refused_by: set[str] = set()
        for attempt in range(retry, retry + 10):
            candidates = [r for r in self.live if r.name not in refused_by] or self.live
            target = self.rng.choice(candidates)
            sender = SlackSender(self.c.http, target.events_url)
            started = time.perf_counter()
            if not msg.first_sent:
                msg.first_sent = time.monotonic()
            msg.deliveries += 1
            try:
                status, _ = await sender.event(event, event_id=event_id, retry_num=attempt or None)
            except (aiohttp.ClientError, OSError):
                self.stats.refused += 1
                refused_by.add(target.name)
                await asyncio.sleep(0.5)  # Slack retries an unacknowledged event (at once, then after ~1 min)
                continue
            if status == 200:
                ack_ms = (time.perf_counter() - started) * 1000
                self.stats.acks_ms.append(ack_ms)
                self.stats.acks_by_phase[self.phase()].append(ack_ms)
                self.stats.acks_by_process[target.name].append(ack_ms)
                return
            self.stats.non_200[status] += 1
            await asyncio.sleep(0.5)

    async def send(self, msg: UserMessage) -> None:
        """The first deliveries now (both events of a double delivery at once), then 0-3 retries of each."""
        plan = [(event, self.event_id()) for event in self.events(msg)]
        now: list[Any] = [self.deliver(msg, event, eid, 0) for event, eid in plan]
        later: list[tuple[float, dict[str, Any], str, int]] = []
        for retry in range(1, self.rng.randint(0, 3) + 1):
            event, eid = self.rng.choice(plan)
            roll = self.rng.random()
            if roll < 0.3:
                self.stats.concurrent_retries += 1
                now.append(self.deliver(msg, event, eid, retry))
            elif roll < 0.7:
                later.append((self.rng.uniform(0.3, 5.0), event, eid, retry))
            else:
                self.stats.late_retries += 1
                later.append((self.rng.uniform(*span(self.args.late_s)), event, eid, retry))
        await asyncio.gather(*now)
        started = time.monotonic()
        for wait_s, event, eid, retry in sorted(later, key=lambda item: item[0]):
            await asyncio.sleep(max(0.0, started + wait_s - time.monotonic()))
            await self.deliver(msg, event, eid, retry)

    async def lag_monitor(self) -> None:
        """This process's own event-loop lag: the ack figures are measured here, next to the fakes."""
        while True:
            started = time.perf_counter()
            await asyncio.sleep(0.01)
            self.stats.loop_lag_ms.append((time.perf_counter() - started) * 1000 - 10)

    async def kill_and_restart(self) -> None:
        victim = self.live[0]
        self.kill_at = time.monotonic()
        print(f"  kill -9 of {victim.name} after {len(self.messages)} messages "
              f"({self.c.chat_model.calls} model calls so far)", flush=True)
        victim.kill()
        await victim.wait()
        await asyncio.sleep(2.0)
        replacement = await self.c.start(f"{victim.name}-restarted")
        self.live[0] = replacement
        self.restarted_at = time.monotonic()
        print(f"  {replacement.name} up {self.restarted_at - self.kill_at:.1f} s after the kill", flush=True)

    async def run(self) -> None:
        self.live = [await self.c.start("a"), await self.c.start("b")]
        lag = asyncio.create_task(self.lag_monitor())
        total = self.args.messages
        interval = 1 / self.args.rate
        started = time.monotonic()
        killer: asyncio.Task[None] | None = None
        try:
            for n in range(total):
                await asyncio.sleep(max(0.0, started + n * interval - time.monotonic()))
                msg = self.plan(n)
                self.messages.append(msg)
                task = asyncio.create_task(self.send(msg), name=f"send:{msg.tag}")
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)
                if n == total // 2:
                    killer = asyncio.create_task(self.kill_and_restart())
                if n % 100 == 99:
                    print(f"  {n + 1} messages sent, {self.c.chat_model.calls} model calls, "
                          f"{sum(len(f) for f in self.watch.thread_finals.values())} finals", flush=True)
            print(f"  all {total} messages sent in {time.monotonic() - started:.0f} s; waiting for their retries",
                  flush=True)
            if killer is not None:
                await killer
            while self.tasks:
                await asyncio.gather(*list(self.tasks))
            self.sent_at = time.monotonic()
            await self.wait_for_answers()
        finally:
            lag.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await lag

    def expected(self) -> Counter[str]:
        return Counter(m.thread_ts for m in self.messages)

    def answered_count(self) -> int:
        expected = self.expected()
        return sum(min(len(self.watch.thread_finals.get(t, ())), n) for t, n in expected.items())

    async def wait_for_answers(self) -> None:
        deadline = time.monotonic() + self.args.answer_wait_s
        while self.answered_count() < len(self.messages) and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.5)  # finals arrive as fake Slack calls: nothing to await but the count
        waited = time.monotonic() - self.sent_at
        print(f"  {self.answered_count()} of {len(self.messages)} answered {waited:.0f} s after the last delivery; "
              "watching 5 s more for late duplicates", flush=True)
        await asyncio.sleep(5.0)


async def run_queries(database_url: str) -> dict[str, str]:
    """run_id -> query of every run recorded."""
    url = database_url.replace("postgres://", "postgresql+asyncpg://", 1)
    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:
            rows = (await conn.execute(sa.text("SELECT run_id, query FROM runs"))).all()
        return {str(r[0]): str(r[1]) for r in rows}
    finally:
        await engine.dispose()


async def report(bench: Bench, database_url: str) -> bool:
    c = bench.c
    queries = await run_queries(database_url)
    by_tag = {m.tag: m for m in bench.messages}
    by_ts = {m.ts: m for m in bench.messages}
    finals_of: dict[str, list[str]] = defaultdict(list)  # tag -> final message ts
    unattributed = 0
    extra_in_threads = 0
    for thread_ts, n in bench.expected().items():
        finals = c.finals(thread_ts, CHANNEL)
        extra_in_threads += max(0, len(finals) - n)
        for final in finals:
            run_id = str(final["metadata"]["event_payload"].get("run_id"))
            tag = next((w for w in queries.get(run_id, "").split() if w in by_tag), None)
            if tag is None:  # not in the runs table: the queue's run -> job record (`<channel>:<ts>`)
                job: Any = await c.redis.get(f"{c.redis_prefix}run-job:{run_id}")
                msg = by_ts.get((job.decode() if isinstance(job, bytes) else str(job or "")).rsplit(":", 1)[-1])
                tag = msg.tag if msg else None
            if tag is None:
                unattributed += 1
                continue
            finals_of[tag].append(str(final["ts"]))
    once = [m for m in bench.messages if len(finals_of[m.tag]) == 1]
    duplicates = [m for m in bench.messages if len(finals_of[m.tag]) > 1]
    lost = [m for m in bench.messages if not finals_of[m.tag]]
    latencies = [(bench.watch.first_final[finals_of[m.tag][0]] - m.first_sent) * 1000 for m in once
                 if finals_of[m.tag][0] in bench.watch.first_final]
    kinds = Counter(m.kind for m in bench.messages)
    deliveries = sum(m.deliveries for m in bench.messages)
    s = bench.stats
    acks = s.acks_ms
    outcomes = Counter(str(f["metadata"]["event_payload"].get("outcome")) for t in bench.expected()
                       for f in c.finals(t, CHANNEL))
    restarted = sum(1 for t in bench.expected() for f in c.finals(t, CHANNEL) if "Re-run from the start" in
                    json.dumps(f.get("blocks")))
    print("\n== reliability: two `diagbot serve` processes, one Redis, one PostgreSQL; one killed -9 midway ==")
    print(f"messages:            {len(bench.messages)} ({kinds['mention']} mentions, {kinds['thread_mention']} mentions "
          f"in threads delivered twice, {kinds['follow_up']} thread follow-ups), in {len(bench.expected())} threads")
    print(f"deliveries:          {deliveries} ({len(acks)} acknowledged, {s.refused} refused by a process that was "
          f"down and re-sent, {sum(s.non_200.values())} non-200 {dict(s.non_200)}; "
          f"{s.concurrent_retries} retries concurrent with the first, {s.late_retries} late {bench.args.late_s} s)")
    print(f"runs started:        {len(queries)} rows in the runs table, {c.chat_model.calls} model calls")
    print(f"answers:             {len(once)} user messages with exactly one final message "
          f"(outcomes {dict(outcomes)}; {restarted} re-run after the kill)")
    print(f"duplicates:          {len(duplicates)} user messages with more than one final "
          f"(+{extra_in_threads} finals beyond a thread's message count)  goal 0")
    print(f"lost:                {len(lost)} user messages without a final  goal 0")
    if unattributed:
        print(f"unattributed finals: {unattributed} (run id not found in the runs table or the queue)")
    print(f"answer latency:      p50 {pct(latencies, 50) / 1000:.2f} s, p99 {pct(latencies, 99) / 1000:.2f} s, "
          f"max {max(latencies, default=float('nan')) / 1000:.2f} s (first delivery -> final visible)")
    print(f"ack:                 p50 {pct(acks, 50):.1f} ms, p99 {pct(acks, 99):.1f} ms, max {max(acks):.1f} ms  "
          f"goal p99 <= {ACK_GOAL_MS:.0f} ms")
    for part, values in [*s.acks_by_phase.items(), *s.acks_by_process.items()]:
        print(f"  ack {part + ':':19} p50 {pct(values, 50):.1f} ms, p99 {pct(values, 99):.1f} ms "
              f"({len(values)} deliveries)")
    print(f"bench loop lag:      p50 {pct(s.loop_lag_ms, 50):.1f} ms, p99 {pct(s.loop_lag_ms, 99):.1f} ms "
          "(the sender shares its loop with the fake Slack and model: part of every ack figure)")
    print("machine: 2 cores (shared), both processes and the fakes on them")
    for m in (duplicates + lost)[:10]:
        print(f"  {'duplicate' if m in duplicates else 'lost'}: {m.tag} {m.kind} ts={m.ts} thread={m.thread_ts} "
              f"deliveries={m.deliveries} finals={finals_of[m.tag]}")
    met = not duplicates and not lost and pct(acks, 99) <= ACK_GOAL_MS
    print(f"goal (0 duplicates, 0 lost, ack p99 <= {ACK_GOAL_MS:.0f} ms): {'met' if met else 'NOT met'}")
    return met


async def main(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="bench-reliability-") as tmp:
        workdir = Path(tmp)
        async with empty_database("postgres", workdir) as url, cluster(workdir, url) as c:
            bench = Bench(c, args, rng)
            try:
                await bench.run()
                met = await report(bench, url)
            finally:
                if args.keep_logs:
                    for replica in c.replicas:
                        target = Path(args.keep_logs) / f"{replica.name}.log"
                        target.write_text(replica.log())
        return 0 if met else 1


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1000, help="user messages to send")
    parser.add_argument("--rate", type=float, default=6.0, help="new user messages per second")
    parser.add_argument("--late-s", default="20:70", help="window of the late retries, seconds after the first")
    parser.add_argument("--delay", default="0.2:1.0", help="model delay per turn, seconds (random in the window)")
    parser.add_argument("--answer-wait-s", type=float, default=180.0, help="how long to wait for the last answers")
    parser.add_argument("--quick", action="store_true", help="200 messages, late retries 2-6 s")
    parser.add_argument("--seed", type=int, default=10)
    parser.add_argument("--keep-logs", default="", help="copy the processes' logs into this directory")
    args = parser.parse_args()
    if args.quick:
        args.messages, args.late_s, args.answer_wait_s = 200, "2:6", 90.0
    return args


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main(parse())))
