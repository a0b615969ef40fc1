"""query_mysql's first look (core/steps/first_look.py): the latest rows of the database's deployments / changes
tables, when it has any, as ordinary query_mysql calls (SHOW TABLES first, then one SELECT per such table)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.steps.first_look import Look

TOOL = "query_mysql"
MAX_TABLES = 2
ROWS = 5
CHANGE_TABLE = re.compile(r"(?:^|_)(?:deploy(?:ment)?s?|changes?|change_?log|releases?|rollouts?)(?:$|_)", re.IGNORECASE)
_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


def change_tables(projection: dict[str, Any] | None) -> list[str]:
    """The tables of a SHOW TABLES projection that record deployments or changes (plain names only)."""
    rows = (projection or {}).get("rows") or []
    names = [str(row[0]) for row in rows if isinstance(row, list) and row]
    return [n for n in names if _PLAIN_NAME.match(n) and CHANGE_TABLE.search(n)][:MAX_TABLES]


async def sql_first_look(look: Look) -> None:
    """SHOW TABLES; then the latest rows (highest first column, usually the id) of each deployments / changes table
    (those at once)."""
    tables = await look.call(TOOL, {"sql": "SHOW TABLES"})
    await look.calls_at_once([(TOOL, {"sql": f"SELECT * FROM {table} ORDER BY 1 DESC LIMIT {ROWS}"})
                              for table in change_tables(tables)])
