"""SQL result columns are hidden by where their values come from (aliases, CONCAT, derived tables), and key/value rows
by the name in the row."""

from __future__ import annotations

import pytest

from core.contracts.evidence import RawResult
from core.evidence.projection import project
from core.tools.sql.secrets import SecretColumns, secret_cells, secret_columns
from testkit.tool_names import ToolName


@pytest.mark.parametrize(
    ("sql", "columns", "expected"),
    [
        ("SELECT password AS p, login FROM db_users", ["p", "login"], [True, False]),
        ("SELECT login, CONCAT(login, ':', password) AS creds FROM accounts", ["login", "creds"], [False, True]),
        ("SELECT x FROM (SELECT api_token AS x FROM clients) t", ["x"], [True]),
        ("SELECT * FROM (SELECT api_token AS x, id FROM clients) t", ["x", "id"], [True, False]),
        ("WITH k AS (SELECT secret AS s FROM vault) SELECT UPPER(s) AS shout FROM k", ["shout"], [True]),
        ("SELECT id, status FROM orders", ["id", "status"], [False, False]),
        ("SELECT * FROM users", ["id", "password_hash"], [False, True]),
        ("this is not SQL (((", ["password", "x"], [True, False]),
    ],
)
def test_secret_columns_follow_the_statement(sql: str, columns: list[str], expected: list[bool]) -> None:
    """Lineage through aliases, functions, derived tables and CTEs; the names decide when the SQL cannot be read."""
    assert secret_columns(sql, columns) == expected
    remembered = SecretColumns()
    first = remembered(sql, columns)
    first.append(True)  # the caller's list: changing it changes nothing remembered
    assert remembered(sql, columns) == expected
    assert remembered(sql, [*columns, "extra_password"]) == secret_columns(sql, [*columns, "extra_password"])


def test_key_value_rows_hide_the_value_next_to_a_secret_name() -> None:
    """('smtp_password', value) hides the value; ('smtp_host', value) does not."""
    assert secret_cells(["smtp_password", "Wint3r!Sun", 3]) == {1}
    assert secret_cells(["smtp_host", "mail.internal"]) == set()


def test_projection_hides_an_aliased_plain_password() -> None:
    """A plain password nothing could recognise by its value is hidden because of its source column."""
    raw = RawResult(columns=["login", "p"], rows=[["ops", "Aut0mn!Leaf"]], total_count=1,
                    effective_arguments={"sql": "SELECT login, password AS p FROM accounts"})
    projection = project("c1", ToolName.QUERY_MYSQL, raw, None)
    assert projection["rows"] == [["ops", "[redacted]"]]
