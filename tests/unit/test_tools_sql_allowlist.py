"""The query_mysql allow-list: functions, table functions, CAST types, catalogs and identifiers not on the lists are
refused with their name; LIMIT/FETCH of any form becomes a literal cap; DIAG_SQL_SCHEMAS opens a catalog."""

from __future__ import annotations

import pytest

from core.errors import ToolFailure
from core.tools.sql.catalogs import parse_schema_setting
from core.tools.sql.policy import Backend, _recheck, _Scope, prepare

BACKENDS: list[Backend] = ["sqlite", "postgres", "mysql"]


def _refusal(sql: str, backend: Backend = "mysql", **kwargs: object) -> str:
    with pytest.raises(ToolFailure) as info:
        prepare(sql, backend, 50, **kwargs)  # type: ignore[arg-type]
    assert info.value.code == "SQL_REFUSED", info.value.message
    return info.value.message


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("sql", "name"), [
    ("SELECT query_to_xml_and_xmlschema('SELECT 1', true, true, '')", "QUERY_TO_XML_AND_XMLSCHEMA"),
    ("SELECT pg_create_physical_replication_slot('x')", "PG_CREATE_PHYSICAL_REPLICATION_SLOT"),
    ("SELECT id FROM orders WHERE id = pg_terminate_backend(1)", "PG_TERMINATE_BACKEND"),
    ("SELECT SLEEP(1)", "SLEEP"),
    ("SELECT REPEAT('x', 10)", "REPEAT"),
    ("SELECT CURRENT_USER()", "CURRENT_USER"),
    ("SELECT VERSION()", "VERSION"),
    ("SELECT some_udf(id) FROM orders", "SOME_UDF"),
])
def test_a_function_not_on_the_list_is_refused_by_name(sql: str, name: str, backend: Backend) -> None:
    """Anonymous calls and typed functions alike: the refusal names the function."""
    assert name in _refusal(sql, backend)


@pytest.mark.parametrize("sql", [
    "SELECT * FROM generate_series(1, 10)", "SELECT * FROM pragma_table_info('orders')", "SELECT * FROM json_each('[1]')",
    "SELECT * FROM dblink('host=x', 'SELECT 1') AS t(a int)",
])
def test_table_valued_functions_are_refused(sql: str) -> None:
    """FROM f(...) is refused; only named tables are read."""
    assert "table-valued" in _refusal(sql) or "system catalog" in _refusal(sql)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("sql", [
    "SELECT COUNT(*), SUM(amount), AVG(amount), MIN(id), MAX(id), GROUP_CONCAT(status) FROM orders",
    "SELECT HOUR(created_at), DATE(created_at), DATE_FORMAT(created_at, '%H'), YEAR(created_at) FROM orders",
    "SELECT DATE_SUB('2026-01-01 00:00:00', INTERVAL 1 DAY), '2026-01-01 00:00:00' - INTERVAL 1 HOUR",
    "SELECT COALESCE(a, b), IFNULL(a, 0), NULLIF(a, 0), IF(a > 1, 1, 0), CASE WHEN a THEN 1 END FROM t",
    "SELECT UPPER(a), LOWER(a), LENGTH(a), SUBSTRING(a, 1, 2), CONCAT(a, b), TRIM(a), LPAD(a, 5, '0') FROM t",
    "SELECT JSON_EXTRACT(a, '$.x'), a->>'$.y' FROM t",
    "SELECT ROW_NUMBER() OVER (ORDER BY id), LAG(id) OVER (ORDER BY id) FROM t",
    "SELECT ROUND(a, 2), FLOOR(a), ABS(a), CAST(a AS SIGNED), CAST(a AS CHAR) FROM t",
])
def test_pure_bounded_functions_pass(sql: str, backend: Backend) -> None:
    """Aggregates, date/time, conditionals, string, JSON, window and math functions are on the list."""
    assert prepare(sql, backend, 50).sql


def test_amplifiers_need_small_literal_arguments() -> None:
    """LPAD/RPAD are allowed only with a literal length up to 1000 (they are how single-function bombs are built)."""
    assert prepare("SELECT LPAD(id, 6, '0') FROM t", "mysql", 10).sql
    assert "LPAD/RPAD" in _refusal("SELECT LPAD('x', 400000000, 'y')")
    assert "LPAD/RPAD" in _refusal("SELECT LPAD('x', id, 'y') FROM t")


def test_cast_types_are_listed() -> None:
    """A CAST to a type not on the list (e.g. a PostgreSQL reg* type through the MySQL parser's fallback) is refused."""
    assert prepare("SELECT CAST(id AS DECIMAL(10, 2)) FROM t", "postgres", 10).sql
    assert "CAST" in _refusal("SELECT CAST(a AS GEOMETRY) FROM t")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("sql", [
    "SELECT * FROM mysql.user", "SELECT * FROM performance_schema.threads", "SELECT * FROM sys.processlist",
    "SELECT * FROM information_schema.processlist", "SELECT * FROM pg_authid", "SELECT a.rolpassword FROM pg_catalog.pg_authid a",
    "SELECT * FROM pg_stat_activity", "SELECT * FROM PG_CATALOG.PG_SHADOW", "SELECT * FROM ｍｙｓｑｌ.ｕｓｅｒ",
    "SELECT * FROM orders WHERE id IN (SELECT oid FROM pg_authid)", "SHOW COLUMNS FROM mysql.user", "DESCRIBE mysql.user",
    "SELECT * FROM sqlite_dbpage", "SELECT * FROM pragma_database_list",
])
def test_system_catalogs_are_refused_by_default(sql: str, backend: Backend) -> None:
    """Credential, session and server-state catalogs are refused on every backend, aliases and look-alikes included."""
    message = _refusal(sql, backend)
    assert "system" in message
    assert "DIAG_SQL_SCHEMAS" in message


@pytest.mark.parametrize("sql", [
    "SELECT table_name FROM information_schema.tables", "SELECT column_name FROM information_schema.COLUMNS",
    "SELECT relname FROM pg_catalog.pg_class", "SELECT * FROM pg_indexes", "SELECT name FROM sqlite_master",
])
def test_table_and_column_metadata_stay_readable(sql: str) -> None:
    """What a `\\d`-style question needs is allowed without configuration."""
    assert prepare(sql, "postgres", 10).sql


def test_diag_sql_schemas_opens_a_catalog() -> None:
    """An operator-listed schema (or schema.relation) may be read; others stay refused."""
    schemas = parse_schema_setting("performance_schema, pg_catalog.pg_stat_activity")
    assert prepare("SELECT * FROM performance_schema.threads", "mysql", 10, schemas=schemas).sql
    assert prepare("SELECT * FROM pg_stat_activity", "postgres", 10, schemas=schemas).sql
    _refusal("SELECT * FROM mysql.user", schemas=schemas)


def test_a_system_default_database_refuses_unqualified_names() -> None:
    """DIAG_SQL_URL pointing at the mysql database: SELECT * FROM user reads mysql.user and is refused."""
    assert "mysql.user" in _refusal("SELECT * FROM user", "mysql", current_db="mysql")
    assert prepare("SELECT * FROM user", "mysql", 10, current_db="shop").sql


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("sql", [
    "SELECT * FROM t LIMIT ALL", "SELECT * FROM t LIMIT NULL", "SELECT * FROM t LIMIT -1", "SELECT * FROM t LIMIT 1e9",
    "SELECT * FROM t LIMIT (SELECT 1000000)", "SELECT * FROM t FETCH FIRST 1000000 ROWS ONLY",
    "SELECT * FROM t FETCH NEXT 5000 ROWS WITH TIES", "SELECT * FROM t LIMIT 18446744073709551615", "SELECT * FROM t",
    "SELECT 1 UNION ALL SELECT 2 LIMIT 99999", "(SELECT * FROM t LIMIT 99999)", "WITH x AS (SELECT 1) SELECT * FROM x LIMIT 1e6",
])
def test_every_limit_form_becomes_a_literal_cap(sql: str, backend: Backend) -> None:
    """Whatever LIMIT/FETCH the text carries, the server is asked for at most cap+1 rows."""
    rendered = prepare(sql, backend, 50).sql
    assert rendered.endswith("LIMIT 51"), rendered
    assert "FETCH" not in rendered.upper()


def test_a_smaller_literal_limit_and_the_offset_are_kept() -> None:
    """LIMIT 3 stays 3; LIMIT 5, 10 keeps its offset and becomes at most cap+1."""
    assert prepare("SELECT * FROM t LIMIT 3", "postgres", 50).sql.endswith("LIMIT 3")
    assert prepare("SELECT * FROM t LIMIT 5, 1000", "sqlite", 50).sql.endswith("LIMIT 51 OFFSET 5")


@pytest.mark.parametrize("sql", ["SELECT $1", "SELECT `a`, $x FROM t", "SELECT session_user", "SELECT current_user",
                                 "SELECT @@version", "SELECT @a", "SELECT @a := 1", "SELECT ?"])
def test_parameters_variables_and_session_words_are_refused(sql: str) -> None:
    """Placeholders, user/server variables and bare session keywords are not data."""
    _refusal(sql, "postgres")


def test_the_rendered_text_is_checked_again() -> None:
    """A call that only appears after rendering (a dialect quirk) is caught by the second check."""
    with pytest.raises(ToolFailure) as info:
        _recheck("SELECT pg_sleep(1) FROM orders", _Scope("postgres", frozenset(), None))
    assert "PG_SLEEP" in info.value.message
    with pytest.raises(ToolFailure):
        _recheck("SELECT 1; DELETE FROM orders", _Scope("postgres", frozenset(), None))
    with pytest.raises(ToolFailure):
        _recheck("SELECT * FROM pg_authid", _Scope("postgres", frozenset(), None))


@pytest.mark.parametrize("backend", BACKENDS)
def test_postgres_and_sqlite_get_what_mysql_means(backend: Backend) -> None:
    """HOUR(), SUM(predicate) and 'literal' - INTERVAL are rendered to forms the backend accepts."""
    sql = prepare("SELECT HOUR(created_at), SUM(amount > 1), '2026-01-01 10:00:00' - INTERVAL 1 HOUR FROM t", backend, 5).sql
    if backend == "postgres":
        assert "EXTRACT(HOUR FROM CAST(created_at AS TIMESTAMP))" in sql
        assert "SUM(CASE WHEN amount > 1 THEN 1 ELSE 0 END)" in sql
        assert "CAST('2026-01-01 10:00:00' AS TIMESTAMP) - INTERVAL" in sql
    elif backend == "sqlite":
        assert "STRFTIME('%H', created_at)" in sql
        assert "DATETIME('2026-01-01 10:00:00', '-1 hours')" in sql
    else:
        assert "HOUR(created_at)" in sql
