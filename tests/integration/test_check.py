"""`diagbot check` and the start-up refusal of `diagbot serve`: every dependency probed with the real clients
(PostgreSQL, MariaDB, Redis, the local OpenAI-compatible server), one line each, the real cause named, no secret."""

from __future__ import annotations

import asyncio
import os
import sys
import time
import uuid
from pathlib import Path

import pytest
from pydantic import SecretStr

from core.health.catalog import config_checks
from core.health.model import check_model_endpoint
from core.health.result import Check, CheckResult, Level, run_checks
from core.health.stores import check_database, check_redis
from core.settings import Settings
from core.tools.logs.health import check_logs
from core.tools.sql.health import check_sql
from entrypoints.check import check_command
from testkit.openai_server import FakeOpenAIServer
from tests.conftest import REDIS_URL

DIAGBOT = str(Path(sys.executable).parent / "diagbot")
CLOSED = "127.0.0.1:9"  # discard port: nothing listens


def _sql(url: str) -> Settings:
    return Settings(diag_sql_url=url)


@pytest.mark.mariadb
@pytest.mark.parametrize(("url", "kind"), [
    ("mysql://root:wrong-password@127.0.0.1:3306/test", "authentication failed"),
    ("mysql://root@127.0.0.1:3306/no_such_db_pkgcheck", "unknown database"),
    (f"mysql://root@{CLOSED}/test", "unreachable: connection refused"),
    ("mysql://root@no-such-host.invalid:3306/test", "unreachable: host not found"),
])
async def test_sql_url_problems_on_mariadb_are_told_apart(url: str, kind: str) -> None:
    """DIAG_SQL_URL on MariaDB: wrong password, unknown database, closed port and unknown host read differently."""
    result = await check_sql(_sql(url))
    assert result.level is Level.WARN
    assert kind in result.detail.replace(" (", ": ", 1) or kind in result.detail, result.line()
    assert "wrong-password" not in result.line()


@pytest.mark.postgres
@pytest.mark.parametrize(("url", "kind"), [
    ("postgresql://no_such_role_pkgcheck@127.0.0.1:5432/test", "authentication failed"),
    ("postgresql://postgres@127.0.0.1:5432/no_such_db_pkgcheck", "unknown database"),
    (f"postgresql://postgres@{CLOSED}/test", "connection refused"),
    ("postgresql://postgres@no-such-host.invalid:5432/test", "host not found"),
])
async def test_sql_url_problems_on_postgres_are_told_apart(url: str, kind: str) -> None:
    """DIAG_SQL_URL on PostgreSQL: unknown role, unknown database, closed port and unknown host read differently."""
    result = await check_sql(_sql(url))
    assert result.level is Level.WARN
    assert kind in result.detail, result.line()


@pytest.mark.mariadb
@pytest.mark.postgres
async def test_reachable_sql_servers_are_ok() -> None:
    """A DIAG_SQL_URL that connects is ok, with the password hidden."""
    for url in ("mysql://root@127.0.0.1:3306/test", "postgresql://postgres:pw@127.0.0.1:5432/test"):
        result = await check_sql(_sql(url))
        assert result.level is Level.OK, result.line()
        assert ":pw@" not in result.line()


async def test_the_query_mysql_tool_names_the_kind_of_connection_failure() -> None:
    """The tool's ERROR says refused (not a generic 'unreachable'), without host or user."""
    from core.errors import ToolFailure
    from core.tools.sql.args import SqlArgs
    from core.tools.sql.tool import SqlTool

    tool = SqlTool(f"postgresql://postgres@{CLOSED}/test", timeout_s=2, row_cap=5)
    with pytest.raises(ToolFailure) as info:
        await tool.run(SqlArgs(sql="SELECT 1"))
    await tool.aclose()
    assert info.value.code == "BACKEND_UNAVAILABLE"
    assert "connection refused" in info.value.message
    assert "127.0.0.1" not in info.value.message


@pytest.mark.redis
async def test_redis_reachable_and_refused() -> None:
    """REDIS_URL: PING answered is ok; a closed port is FATAL naming the refusal and never the password."""
    assert (await check_redis(Settings(redis_url=REDIS_URL))).level is Level.OK
    result = await check_redis(Settings(redis_url=f"redis://:hunter2@{CLOSED}/0"))
    assert result.level is Level.FATAL
    assert "connection refused" in result.detail
    assert "hunter2" not in result.line()


@pytest.mark.postgres
async def test_database_url_problems_are_fatal_and_named(tmp_path: Path) -> None:
    """DATABASE_URL: an unknown database is FATAL naming it; a new SQLite file in an existing folder is fine."""
    result = await check_database(Settings(database_url="postgresql://postgres@127.0.0.1:5432/no_such_db_pkgcheck"))
    assert result.level is Level.FATAL
    assert "unknown database" in result.detail
    ok = await check_database(Settings(database_url=f"sqlite+aiosqlite:///{tmp_path}/new.db"))
    assert ok.level is Level.OK
    assert not (tmp_path / "new.db").exists()  # checking does not create it
    missing = await check_database(Settings(database_url=f"sqlite+aiosqlite:///{tmp_path}/nope/new.db"))
    assert missing.level is Level.FATAL


async def test_model_endpoint_lists_the_configured_models() -> None:
    """models.list: the configured model listed is ok; one not listed is a warning naming it; a closed port is refused."""
    async with FakeOpenAIServer(models=["served-model"]) as server:
        ok = await check_model_endpoint(Settings(openai_base_url=server.base_url, diag_model="served-model"))
        assert ok.level is Level.OK, ok.line()
        other = await check_model_endpoint(Settings(openai_base_url=server.base_url, diag_model="served-model",
                                                    diag_guard_model="missing-model"))
        assert other.level is Level.WARN
        assert "DIAG_GUARD_MODEL=missing-model" in other.detail
    refused = await check_model_endpoint(Settings(openai_base_url=f"http://{CLOSED}/v1", diag_model="m"))
    assert refused.level is Level.WARN
    assert "connection refused" in refused.detail


async def test_checks_run_concurrently_bounded_and_never_raise() -> None:
    """Slow checks run at once (total about one timeout), a hanging one ends at the timeout, a raising one is a line."""
    async def slow() -> CheckResult:
        await asyncio.sleep(0.3)  # slow checks: run one after another they would take five times as long
        return CheckResult(name="slow", level=Level.OK, detail="done")

    async def hangs() -> CheckResult:
        await asyncio.sleep(60)  # a check that never ends: the timeout must
        raise AssertionError

    async def raises() -> CheckResult:
        raise RuntimeError("boom")

    checks = [Check(f"slow{i}", slow) for i in range(5)] + [Check("hangs", hangs, failing=Level.WARN),
                                                            Check("raises", raises)]
    started = time.monotonic()
    results = await run_checks(checks, timeout_s=0.6)
    assert time.monotonic() - started < 1.5
    assert [r.level for r in results] == [Level.OK] * 5 + [Level.WARN, Level.FATAL]
    assert "no answer within 0.6 s" in results[5].detail
    assert "RuntimeError" in results[6].detail


async def test_check_on_embedded_defaults_passes_with_lines_for_every_item(tmp_path: Path) -> None:
    """`diagbot check` with nothing configured: exit 0, one line per item, the in-process warning once, no FATAL."""
    lines: list[str] = []
    code = await check_command(Settings(database_url=f"sqlite+aiosqlite:///{tmp_path}/d.db"), out=lines.append)
    assert code == 0, "\n".join(lines)
    names = {line.split()[1].rstrip(":") for line in lines[:-1]}
    assert {"slack.tokens", "model.settings", "database", "tool.query_logs", "tool.lookup_knowledge",
            "tool.query_mysql", "redis.mode"} <= names
    assert sum("REDIS_URL unset" in line for line in lines) == 1
    assert not [line for line in lines if line.startswith("FATAL")]
    assert lines[-1] == "diagbot check: 0 fatal, 1 warning"


async def test_check_exits_non_zero_on_a_fatal_problem(tmp_path: Path) -> None:
    """A configuration error (DIAG_MODEL without an endpoint) makes `diagbot check` exit 1."""
    lines: list[str] = []
    code = await check_command(Settings(diag_model="m", database_url=f"sqlite+aiosqlite:///{tmp_path}/d.db"),
                               out=lines.append)
    assert code == 1
    assert any(line.startswith("FATAL") and "OPENAI_BASE_URL" in line for line in lines)


async def test_no_secret_reaches_any_check_line(tmp_path: Path) -> None:
    """Every secret-bearing setting set to a marked value: none of the marks appears in any line."""
    mark = uuid.uuid4().hex
    settings = Settings(
        slack_bot_token=SecretStr(f"xoxb-{mark}1"), slack_app_token=SecretStr(f"xapp-{mark}2"),
        slack_signing_secret=SecretStr(f"{mark}3"), slack_api_url=f"http://{CLOSED}/api/",
        openai_api_key=SecretStr(f"sk-{mark}4"), openai_base_url=f"http://user:{mark}5@{CLOSED}/v1", diag_model="m",
        redis_url=f"redis://:{mark}6@{CLOSED}/0", database_url=f"postgresql://u:{mark}7@{CLOSED}/d",
        diag_sql_url=f"mysql://u:{mark}8@{CLOSED}/d", diag_loki_url=f"http://u:{mark}9@{CLOSED}",
        diag_loki_token=SecretStr(f"{mark}10"),
    )
    from entrypoints.check import run_all

    lines = [r.line() for r in await run_all(settings, serving=True)]
    assert len(lines) >= 10
    assert not [line for line in lines if mark in line]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "OPENAI_", "DIAG_", "REDIS_URL"))}
    return {**env, **extra}


async def _run(*args: str, env: dict[str, str], cwd: Path) -> tuple[int, str, float]:
    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(DIAGBOT, *args, env=env, cwd=cwd, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.STDOUT)
    out, _ = await asyncio.wait_for(proc.communicate(), 30)
    return proc.returncode or 0, out.decode(), time.monotonic() - started


async def test_serve_in_http_mode_without_signing_secret_refuses_listing_every_problem(tmp_path: Path) -> None:
    """`diagbot serve` with a bot token but no signing secret and no model: exit 2 naming both, no traceback; the
    checks themselves take well under 5 s (the process bound is loose: imports on a loaded 2-core machine vary)."""
    env = _env(SLACK_BOT_TOKEN="xoxb-1", SLACK_API_URL=f"http://{CLOSED}/api/",
               DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path}/d.db")
    code, out, took = await _run("serve", env=env, cwd=tmp_path)
    assert code == 2, out
    assert "SLACK_SIGNING_SECRET" in out
    assert "no model configured" in out
    assert "Traceback" not in out
    assert took < 25, took
    from entrypoints.check import preflight

    settings = Settings(slack_bot_token=SecretStr("xoxb-1"), slack_api_url=f"http://{CLOSED}/api/",
                        database_url=f"sqlite+aiosqlite:///{tmp_path}/d.db")
    started = time.monotonic()
    lines: list[str] = []
    assert await preflight(settings, err=lines.append) is None
    assert time.monotonic() - started < 5
    assert sum(line.lstrip().startswith("FATAL") for line in lines) >= 2


async def test_serve_without_slack_tokens_fails_clearly(tmp_path: Path) -> None:
    """No Slack tokens at all: exit 2 naming SLACK_BOT_TOKEN, not a Bolt traceback."""
    code, out, _ = await _run("serve", env=_env(DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path}/d.db"), cwd=tmp_path)
    assert code == 2
    assert "SLACK_BOT_TOKEN" in out
    assert "Traceback" not in out


def test_config_checks_cover_every_dependency() -> None:
    """The catalog lists the model, Redis, the database and each tool backend."""
    names = {c.name for c in config_checks(Settings(), serving=False)}
    assert {"model.settings", "model.endpoint", "redis", "database", "tool.query_logs", "tool.lookup_knowledge",
            "tool.query_mysql"} <= names


async def test_loki_and_elasticsearch_are_checked_with_a_real_query() -> None:
    """DIAG_LOKI_URL / DIAG_ES_URL: a fake server that answers is ok; a closed port is a warning naming the setting."""
    from tests.fakes.es_server import FakeElasticsearch
    from tests.fakes.loki_server import FakeLoki

    async with FakeLoki() as loki:
        result = await check_logs(Settings(diag_loki_url=loki.url))
        assert result.level is Level.OK, result.line()
        assert loki.url.split("://")[1] in result.detail
    async with FakeElasticsearch() as es:
        result = await check_logs(Settings(diag_es_url=es.url, diag_es_index="logs-*"))
        assert result.level is Level.OK, result.line()
    for setting in ("diag_loki_url", "diag_es_url"):
        down = await check_logs(Settings.model_validate({setting: f"http://user:s3cret@{CLOSED}"}))
        assert down.level is Level.WARN
        assert setting.upper() in down.detail
        assert "s3cret" not in down.line()


async def test_sqlite_sql_url_is_opened_read_only(tmp_path: Path) -> None:
    """DIAG_SQL_URL on SQLite: the bundled database is ok with its tables counted; a file that is not a database
    and a missing file are warnings."""
    ok = await check_sql(Settings())
    assert ok.level is Level.OK
    assert "tables" in ok.detail
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database" * 100)
    assert (await check_sql(_sql(f"sqlite:///{junk}"))).level is Level.WARN
    assert (await check_sql(_sql(f"sqlite:///{tmp_path}/missing.db"))).level is Level.WARN
    assert not (tmp_path / "missing.db").exists()


IMPORT_THREAD_PROBE = """
import asyncio, sys, threading
from core.health.model import check_model_endpoint
from core.settings import Settings

seen = []


class Watch:
    def find_spec(self, name, path=None, target=None):
        if name == "openai":
            seen.append(threading.current_thread() is threading.main_thread())
        return None


assert "openai" not in sys.modules
sys.meta_path.insert(0, Watch())
result = asyncio.run(check_model_endpoint(Settings(openai_base_url="http://127.0.0.1:9/v1", diag_model="m")))
print(result.level.value, seen)
"""


async def test_the_model_check_imports_the_sdk_off_the_event_loop() -> None:
    """Importing openai takes seconds of CPU on a loaded machine; on the loop it starved the Redis and database checks
    beside it past their 3 s bound, and `diagbot serve` refused to start ("redis: no answer within 3 s"). The import
    runs in a worker thread (seen by an import hook in a fresh process, where openai is not imported yet)."""
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", IMPORT_THREAD_PROBE,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()[-2000:]
    assert out.decode().split() == ["warning", "[False]"]
