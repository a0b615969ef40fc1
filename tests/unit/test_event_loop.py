"""DIAG_EVENT_LOOP (core/runtime.py): which loop diagbot's processes and the Slack ingress thread run on."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import pytest

from bot.ingress import IngressThread
from core.runtime import EventLoopUnavailable, event_loop, run_loop
from entrypoints.cli import main


async def _loop_module() -> str:
    return type(asyncio.get_running_loop()).__module__


def test_auto_is_uvloop_where_it_is_a_dependency() -> None:
    assert importlib.util.find_spec("uvloop") is not None, "uvloop is a dependency on Linux (pyproject.toml)"
    assert event_loop("auto") == "uvloop"
    assert run_loop(_loop_module(), event_loop("auto")).startswith("uvloop")


def test_asyncio_is_the_way_back() -> None:
    assert event_loop("asyncio") == "asyncio"
    assert run_loop(_loop_module(), "asyncio").startswith("asyncio")


@pytest.mark.parametrize("kind", ["uvloop", "asyncio"])
def test_the_ingress_thread_runs_the_loop_kind_of_its_starter(kind: str) -> None:
    """bot/ingress.py's thread (the acks) runs the same kind of loop as the serve loop that started it."""
    from aiohttp import web

    seen: list[str] = []

    def build() -> web.Application:
        app = web.Application()

        async def on_startup(_: web.Application) -> None:
            seen.append(type(asyncio.get_running_loop()).__module__)

        app.on_startup.append(on_startup)
        return app

    async def serve() -> None:
        ingress = IngressThread(build, "127.0.0.1", 0)
        await ingress.start()
        await ingress.aclose()

    run_loop(serve(), kind)
    assert len(seen) == 1
    assert seen[0].startswith(kind), seen


def test_uvloop_asked_for_but_missing_names_the_way_out(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "uvloop" else real(name, *a))
    with pytest.raises(EventLoopUnavailable, match="DIAG_EVENT_LOOP=asyncio"):
        event_loop("uvloop")
    assert event_loop("auto") == "asyncio"  # auto falls back quietly


def test_the_cli_reports_a_missing_uvloop_as_configuration(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "uvloop" else real(name, *a))
    monkeypatch.setenv("DIAG_EVENT_LOOP", "uvloop")
    monkeypatch.setenv("DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path}/cli.db")
    assert main(["tool", "query_logs", "--service", "order-service", "--query", "x"]) == 2
    err = capsys.readouterr().err
    assert "invalid configuration" in err
    assert "uvloop is not installed" in err


def test_an_unknown_loop_is_refused_by_the_settings(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DIAG_EVENT_LOOP", "trio")
    assert main(["tool", "query_logs", "--service", "order-service", "--query", "x"]) == 2
    assert "diag_event_loop" in capsys.readouterr().err
