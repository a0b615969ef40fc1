"""Per-run cost account for bench_pipeline: CPU by stage, Redis commands / round trips / bytes, SQL statements.

- CPU by stage: py-spy samples the worker processes from outside (`--nonblocking`: the process is never stopped,
  so the run it measures is the run it would have been). Each sample's stack is given to the innermost frame of
  ours (core/, bot/, the bench's doubles) and that file's stage; library frames (pydantic, json, logging, redis-py)
  count for the code of ours that called them. Samples with no frame of ours are the event loop and socket I/O.
  Stage shares times the processes' measured CPU per run give ms per stage.
- Redis: every process of the bench counts at redis-py's connection level what it sends: commands, round trips
  (one `send_packed_command` = one write the client then waits on: a pipeline is one) and bytes. A private
  redis-server adds its own figures: commands by name (INFO commandstats) and its CPU.
- SQL: SQLAlchemy's `before_cursor_execute` on every engine of the process.

The counters are plain integer additions around redis-py's send and SQLAlchemy's execute: installed in the bench
processes only, never in the product.
"""

from __future__ import annotations

import contextlib
import gc
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Stage of a file of ours, first match on its path relative to the tree (a module that moves keeps its stage as
# long as its folder says what it does; files matched by none are listed under "other (ours)").
STAGE_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ingress", ("bot/events.py", "bot/app.py", "bot/request_guard.py", "bot/dedup.py", "bot/verify.py",
                 "bot/access.py", "bot/serve.py", "bot/slack_checks.py", "bot/commands.py", "bot/metering.py",
                 "bot/socket_metering.py", "bot/unhandled.py", "bot/scopes.py")),
    ("queue", ("core/queue/", "bot/turn_jobs.py", "bot/local_claims.py", "bot/worker.py", "core/turns/queue",
               "core/turns/jobs", "core/turns/claims", "core/turns/lease")),
    ("turn lifecycle", ("bot/turns.py", "bot/watchdog.py", "bot/recovery.py", "bot/final_once.py", "core/turns/")),
    ("router", ("core/steps/router.py",)),
    ("judge", ("core/steps/judge.py",)),
    ("agent loop", ("core/steps/", "core/llm/", "core/run.py", "core/run/", "core/kernel/")),
    ("tools", ("core/tools/",)),
    ("boundary + redaction", ("core/evidence/",)),
    ("guard", ("core/guard/",)),
    ("release", ("core/release/",)),
    ("render", ("bot/render/",)),
    ("delivery", ("bot/delivery.py", "bot/stream.py", "bot/outgoing.py", "bot/progress.py", "bot/slack_retry.py",
                  "bot/slack_errors.py", "bot/surface", "bot/slack_")),
    ("stores", ("core/stores/", "core/service/timeline.py", "core/service/sessions.py", "core/service/retention.py")),
    ("service", ("core/service/", "core/bootstrap.py", "core/settings.py", "core/resources.py", "core/health/")),
    ("observability", ("core/observability/",)),
)
# Files of ours that only describe data (models, ports): their frames count for whoever called them.
TRANSPARENT = ("core/contracts/", "core/ports.py", "core/errors.py", "core/runtime.py", "core/__init__.py")
# The bench's own doubles of what is remote in production (the model, the Slack Web API).
DOUBLES = ("DelayedModel.", "respond", "StubSlack.")
STAGES = (*(name for name, _ in STAGE_RULES), "bench doubles (model, Slack)", "event loop + socket I/O",
          "other (ours)")
OURS = ("core/", "bot/", "bench/")


def _relative(path: str, roots: tuple[str, ...]) -> str | None:
    """The path inside one of our trees (core/..., bot/..., bench/...), None for a library or the stdlib."""
    if "site-packages" in path or "/lib/python3" in path:
        return None
    for root in roots:
        if path.startswith(root):
            rel = path[len(root):].lstrip("/")
            return rel if rel.startswith(OURS) else None
    return None


def _frame(text: str) -> tuple[str, str]:
    """'func (path:line)' -> (func, path)."""
    func, _, rest = text.rpartition(" (")
    return func, rest.rsplit(":", 1)[0]


def _stage_of(rel: str, func: str) -> str | None:
    """The stage of a frame of ours; None when it is transparent (the caller decides)."""
    if rel.startswith("bench/"):
        return STAGES[-3] if func.startswith(DOUBLES) else None
    if rel.startswith(TRANSPARENT):
        return None
    for name, prefixes in STAGE_RULES:
        if rel.startswith(prefixes):
            return name
    return "other (ours)"


def _library(path: str) -> str:
    """What the innermost frame is in: a package of site-packages, a module of the stdlib, or 'ours'."""
    for marker in ("site-packages/", "/lib/python3.11/", "/lib/python3.12/"):
        if marker in path:
            tail = path.split(marker, 1)[1]
            head = tail.split("/", 1)[0]
            return head.removesuffix(".py")
    return "ours (own lines, C calls)"


@dataclass
class Attribution:
    """Samples by stage and by innermost library, and the files of ours no stage rule matched."""

    stages: Counter[str] = field(default_factory=Counter)
    libraries: Counter[str] = field(default_factory=Counter)
    functions: Counter[str] = field(default_factory=Counter)
    unmatched: Counter[str] = field(default_factory=Counter)

    @property
    def total(self) -> int:
        return sum(self.stages.values())


def attribute(raw: str, roots: tuple[str, ...]) -> Attribution:
    """Attribute py-spy's raw (collapsed) stacks: 'frame;frame;...;innermost count' per line."""
    found = Attribution()
    for line in raw.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [_frame(part) for part in stack.split(";")]
        stage = STAGES[-2]
        for func, path in reversed(frames):
            rel = _relative(path, roots)
            if rel is None:
                continue
            named = _stage_of(rel, func)
            if named is not None:
                stage = named
                if named == "other (ours)":
                    found.unmatched[rel] += count
                break
        func, path = frames[-1]
        found.stages[stage] += count
        found.libraries[_library(path)] += count
        found.functions[f"{func} ({Path(path).name})"] += count
    return found


def py_spy() -> str | None:
    """The py-spy binary: $BENCH_PY_SPY, beside this Python (the dev extra installs it), or on PATH."""
    beside = Path(sys.executable).parent / "py-spy"
    return os.environ.get("BENCH_PY_SPY") or (str(beside) if beside.exists() else shutil.which("py-spy"))


class Sampler:
    """py-spy record of some processes until stopped; `stop()` returns the raw stacks of all of them."""

    def __init__(self, pids: list[int], rate: int = 250) -> None:
        binary = py_spy()
        if binary is None:
            raise FileNotFoundError("py-spy")
        self._dir = tempfile.TemporaryDirectory(prefix="bench-spy-")
        self._outputs = [Path(self._dir.name) / f"{pid}.txt" for pid in pids]
        self._procs = [subprocess.Popen([binary, "record", "--pid", str(pid), "--rate", str(rate), "--gil",
                                         "--full-filenames", "--format", "raw", "--output", str(out)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                       for pid, out in zip(pids, self._outputs, strict=True)]
        time.sleep(0.5)  # py-spy attaches

    def stop(self) -> str:
        for proc in self._procs:
            proc.send_signal(signal.SIGINT)  # py-spy writes its output on Ctrl-C
        for proc in self._procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        raw = "\n".join(out.read_text() for out in self._outputs if out.exists())
        self._dir.cleanup()
        if keep := os.environ.get("BENCH_SPY_RAW"):  # the raw stacks for a closer look (py-spy's collapsed format)
            Path(keep).write_text(raw)
        return raw


# --- counters inside a bench process ---------------------------------------------------------------------------

COUNTS: Counter[str] = Counter()
"""This process's Redis and SQL counts (bench processes only: installed by install_counters())."""


def install_gc_clock() -> None:
    """Add each garbage collection's duration to COUNTS (gc_ms, gc_ms_gen<N>): py-spy shows a collection only as
    the line that allocated when it started."""
    started: list[float] = [0.0]

    def clock(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
            return
        ms = (time.perf_counter() - started[0]) * 1000
        COUNTS["gc_ms"] += ms  # type: ignore[assignment]
        COUNTS[f"gc_ms_gen{info['generation']}"] += ms  # type: ignore[assignment]

    gc.callbacks.append(clock)


def install_counters() -> None:
    """Count what this process sends to Redis (commands, round trips, bytes) and the SQL statements it executes."""
    from redis.asyncio.connection import AbstractConnection
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    def counted(send: Any) -> Any:
        async def counted_send(self: Any, command: Any, check_health: bool = True) -> None:
            if getattr(self, "_bench_counting", False):  # a subclass's send calling its parent's: counted once
                await send(self, command, check_health)
                return
            COUNTS["redis_round_trips"] += 1
            if isinstance(command, str | bytes):
                COUNTS["redis_bytes"] += len(command)
            else:
                command = list(command)
                COUNTS["redis_bytes"] += sum(len(part) for part in command)
            self._bench_counting = True
            try:
                await send(self, command, check_health)
            finally:
                self._bench_counting = False

        return counted_send

    pending = [AbstractConnection]  # and every connection class of the tree that sends its own way
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if "send_packed_command" in vars(cls):
            setattr(cls, "send_packed_command", counted(vars(cls)["send_packed_command"]))  # noqa: B010
    pack_one = AbstractConnection.pack_command
    pack_many = AbstractConnection.pack_commands

    def counted_pack(pack: Any) -> Any:
        def counted_one(self: Any, *args: Any) -> Any:
            if getattr(self, "_bench_packing", False):  # a subclass's pack calling its parent's: counted once
                return pack(self, *args)
            COUNTS["redis_commands"] += 1
            self._bench_packing = True
            try:
                return pack(self, *args)
            finally:
                self._bench_packing = False

        return counted_one

    counted_one = counted_pack(pack_one)
    pending = list(AbstractConnection.__subclasses__())  # connection classes of the tree that pack their own way
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if "pack_command" in vars(cls):
            setattr(cls, "pack_command", counted_pack(vars(cls)["pack_command"]))  # noqa: B010

    def counted_many(self: Any, commands: Any) -> Any:
        commands = list(commands)
        COUNTS["redis_commands"] += len(commands)
        return pack_many(self, commands)

    AbstractConnection.pack_command = counted_one  # type: ignore[method-assign]
    AbstractConnection.pack_commands = counted_many  # type: ignore[method-assign]

    def on_execute(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        COUNTS["sql_statements"] += 1
        words = statement.split()
        verb = words[0].upper() if words else "?"
        table = next((w for w, prev in zip(words[1:], words, strict=False)
                      if prev.upper() in ("INTO", "FROM", "UPDATE")), "")
        COUNTS[f"sql:{verb} {table}".strip()] += 1

    event.listen(Engine, "before_cursor_execute", on_execute)


# --- a private redis-server ------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def private_redis(enabled: bool = True) -> Iterator[str | None]:
    """A redis-server of the bench's own on loopback (no persistence), so its INFO counts only the bench; yields its
    URL, or None when there is no redis-server binary (the bench then uses REDIS_URL and skips server figures)."""
    binary = shutil.which("redis-server")
    if binary is None or not enabled:
        yield None
        return
    port = _free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--maxclients", "10000", "--loglevel", "warning"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def server_figures(info: dict[str, Any], commandstats: dict[str, Any]) -> dict[str, float]:
    """What one INFO snapshot says: commands by name, bytes received, CPU seconds."""
    figures = {f"cmd:{name.removeprefix('cmdstat_')}": float(stats["calls"]) for name, stats in commandstats.items()}
    figures["net_input_bytes"] = float(info.get("total_net_input_bytes", 0))
    figures["cpu_s"] = float(info.get("used_cpu_user", 0)) + float(info.get("used_cpu_sys", 0))
    return figures


def delta(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    return {key: value - before.get(key, 0.0) for key, value in after.items() if value - before.get(key, 0.0)}


def env_flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")
