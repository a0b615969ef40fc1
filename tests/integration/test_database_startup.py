"""Start-up on a real database: two processes starting at the same moment on an empty PostgreSQL database both
come up, and a database that cannot be used is refused with its real cause (not always "check the URL")."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import uuid
from asyncio.subprocess import PIPE
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from core.bootstrap import open_schema
from core.errors import StoreUnavailable
from core.settings import Settings
from core.stores.sql.db import Database
from core.stores.sql.migrate import head_revision, schema_status
from entrypoints.cli import main
from tests.conftest import MARIADB_URL, POSTGRES_URL
from tests.sql_databases import empty_database
from tests.waiting import until

REPO = Path(__file__).resolve().parents[2]
# Each process imports everything first, says "ready", then waits for "go" on stdin: the test releases them together.
STARTER = """
import asyncio, sys
from core.bootstrap import build_services
from core.settings import Settings
print("ready", flush=True)
sys.stdin.readline()
async def main():
    services = await build_services(Settings(database_url=sys.argv[1]))
    await services.aclose()
    print("up", flush=True)
asyncio.run(main())
"""


@pytest.mark.postgres
async def test_two_processes_starting_together_on_an_empty_postgres_both_come_up(tmp_path: Path) -> None:
    """Two real processes run build_services (auto-migrate on) at the same moment on an empty database: both exit
    0 and the schema is at head once."""
    async with empty_database("postgres", tmp_path) as url:
        env = {**os.environ, "DIAG_AUTO_MIGRATE": "1", "PYTHONPATH": str(REPO)}
        env.pop("REDIS_URL", None)
        procs = [await asyncio.create_subprocess_exec(
            sys.executable, "-c", STARTER, url, stdin=PIPE, stdout=PIPE, stderr=PIPE, env=env, cwd=tmp_path)
            for _ in range(2)]
        try:
            for proc in procs:
                assert proc.stdout is not None
                line = await asyncio.wait_for(proc.stdout.readline(), 60)
                assert line.strip() == b"ready"
            for proc in procs:  # released together: both reach the empty database at the same moment
                assert proc.stdin is not None
                proc.stdin.write(b"go\n")
            results = await asyncio.wait_for(asyncio.gather(*(proc.communicate() for proc in procs)), 60)
        finally:
            for proc in procs:
                if proc.returncode is None:
                    proc.kill()
        for proc, (out, err) in zip(procs, results, strict=True):
            assert proc.returncode == 0, err.decode()
            assert out.strip() == b"up"
        database = Database(url)
        try:
            assert (await schema_status(database)).current == head_revision()
        finally:
            await database.dispose()


async def _cause(url: str, *, auto: bool = True) -> StoreUnavailable:
    database = Database(url)
    try:
        with pytest.raises(StoreUnavailable) as caught:
            await open_schema(database, auto)
    finally:
        await database.dispose()
    return caught.value


@pytest.mark.postgres
async def test_unknown_postgres_database_is_named() -> None:
    """A database name the server does not have: said so, with the fix."""
    url = make_url(POSTGRES_URL).set(database=f"diag_missing_{uuid.uuid4().hex[:8]}").render_as_string(False)
    err = await _cause(url)
    assert "does not exist" in err.reason
    assert "CREATE DATABASE" in err.fix


async def test_refused_port_is_named() -> None:
    """Nothing listens on the port: 'connection refused', not a driver class name."""
    err = await _cause("postgresql://postgres@127.0.0.1:1/test")
    assert "connection refused" in err.reason


@pytest.mark.mariadb
async def test_wrong_mariadb_password_is_named() -> None:
    """The server refuses the credentials: 'authentication failed', and the password is never shown."""
    url = make_url(MARIADB_URL).set(password="wrong-pass-9c1").render_as_string(False)
    err = await _cause(url)
    assert "authentication failed" in err.reason
    assert "wrong-pass-9c1" not in f"{err} {err.fix}"


async def test_sqlite_file_in_a_missing_folder_is_named(tmp_path: Path) -> None:
    """SQLite cannot create its file: the folder is named as the thing to fix."""
    before = set(threading.enumerate())
    err = await _cause(f"sqlite:///{tmp_path}/no/such/folder/diag.db")
    assert "cannot be opened" in err.reason
    assert "folder" in err.fix
    # aiosqlite stops the worker thread of a failed connect without awaiting it; let it finish on this loop, or it
    # calls back into a closed loop during a later test.
    await until(lambda: not any("_connection_worker_thread" in t.name for t in set(threading.enumerate()) - before),
                message="aiosqlite's worker thread to stop")


async def test_stale_schema_without_auto_migrate_is_named(tmp_path: Path) -> None:
    """DIAG_AUTO_MIGRATE off and an empty database: refused, naming `diagbot migrate`."""
    err = await _cause(f"sqlite:///{tmp_path}/diag.db", auto=False)
    assert "schema behind" in err.reason
    assert "diagbot migrate" in err.reason


@pytest.mark.postgres
async def test_a_role_without_create_privilege_is_named(tmp_path: Path) -> None:
    """A role that may connect but not create tables: the missing privilege is named (and how to migrate)."""
    role = f"diag_ro_{uuid.uuid4().hex[:8]}"
    async with empty_database("postgres", tmp_path) as url:
        admin = create_async_engine(make_url(POSTGRES_URL).set(database=make_url(url).database), isolation_level="AUTOCOMMIT")
        try:
            async with admin.connect() as conn:
                await conn.execute(sa.text(f"CREATE ROLE {role} LOGIN"))
                await conn.execute(sa.text(f"REVOKE CREATE ON SCHEMA public FROM PUBLIC, {role}"))
            err = await _cause(make_url(url).set(username=role).render_as_string(False))
            assert "privilege" in err.reason
            assert "diagbot migrate" in err.fix
        finally:
            async with admin.connect() as conn:
                await conn.execute(sa.text(f"DROP OWNED BY {role}"))
                await conn.execute(sa.text(f"DROP ROLE IF EXISTS {role}"))
            await admin.dispose()


def test_settings_auto_migrate_defaults_on_for_sqlite_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """DIAG_AUTO_MIGRATE unset: on for SQLite, off for PostgreSQL/MariaDB; set, it wins."""
    monkeypatch.delenv("DIAG_AUTO_MIGRATE", raising=False)
    assert Settings(database_url="sqlite+aiosqlite:///./x.db").auto_migrate
    assert not Settings(database_url="postgresql://u@h/db").auto_migrate
    assert not Settings(database_url="mysql://u@h/db").auto_migrate
    monkeypatch.setenv("DIAG_AUTO_MIGRATE", "1")
    assert Settings(database_url="postgresql://u@h/db").auto_migrate
    monkeypatch.setenv("DIAG_AUTO_MIGRATE", "0")
    assert not Settings(database_url="sqlite:///x.db").auto_migrate


def test_migrate_command_upgrades_then_reports_head(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """`diagbot migrate` on an empty database upgrades it (from -> to); run again it says it is at head."""
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path}/diag.db")
    assert main(["migrate"]) == 0
    assert f"upgraded: empty database -> {head_revision()}" in capsys.readouterr().out
    assert main(["migrate"]) == 0
    assert f"already at head ({head_revision()})" in capsys.readouterr().out


def test_migrate_command_names_an_unreachable_server(monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """`diagbot migrate` against a closed port: exit 1, one line with the cause and the fix, no traceback."""
    monkeypatch.setenv("DATABASE_URL", "postgresql://postgres:s3cret-pw@127.0.0.1:1/test")
    assert main(["migrate"]) == 1
    err = capsys.readouterr().err
    assert "connection refused" in err
    assert "start the database server" in err
    assert "Traceback" not in err
    assert "s3cret-pw" not in err


def test_commands_name_the_database_cause_at_start(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Any command that opens the stores (here `trace`) names the real cause instead of a generic 'check the URL'."""
    monkeypatch.setenv("DATABASE_URL", "postgresql://postgres@127.0.0.1:1/test")
    monkeypatch.setenv("DIAG_AUTO_MIGRATE", "1")
    assert main(["trace", "run_x"]) == 2
    err = capsys.readouterr().err
    assert "connection refused" in err
    assert "check the URL" not in err
