"""Which columns of a SQL result hold secrets, by where their values come from, not by what they are called.

`SELECT password AS p`, `SELECT CONCAT(user, ':', password) AS creds` or a derived table that renames `api_token`
all return secrets under innocent names. The statement (sqlglot, MySQL dialect, as the tool receives it) tells: an
output column is secret when its expression reads a column named like a secret, directly or through an alias of an
inner SELECT or CTE. When the statement cannot be read (or `*` hides the positions) the names decide, as before.
A row of a key/value table (`('smtp_password', 'Wint3r!')`) is handled per row by `secret_cells`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import sqlglot
from sqlglot import expressions as exp

from core.evidence.redaction import is_secret_key

_NAME_CELL = re.compile(r"[A-Za-z_][\w.-]{0,63}")
_MAX_SQL_CHARS = 16 * 1024


def _tainted_aliases(tree: Any) -> set[str]:
    """Lower-case names of every inner alias whose expression reads a secret-named column (to a fixpoint)."""
    tainted: set[str] = set()
    aliases = [a for a in tree.find_all(exp.Alias) if a.alias]
    changed = True
    while changed:
        changed = False
        for alias in aliases:
            name = alias.alias.lower()
            if name in tainted:
                continue
            if any(is_secret_key(c.name) or c.name.lower() in tainted for c in alias.this.find_all(exp.Column)):
                tainted.add(name)
                changed = True
    return tainted


def _secret_filter_columns(tree: Any) -> set[str] | None:
    """When the statement filters on a literal that names a secret (`WHERE name = 'smtp_password'`, `LIKE
    '%password%'`, `IN (...)`), the lower-case names of the columns compared with it (the key columns, which stay
    visible); None when no literal names a secret."""
    keys: set[str] = set()
    found = False
    for literal in tree.find_all(exp.Literal):
        if not literal.is_string or not is_secret_key(literal.this.strip("%_ ").replace(" ", "_")):
            continue
        found = True
        parent = literal.parent.parent if isinstance(literal.parent, exp.Tuple | exp.In) else literal.parent
        if parent is not None:
            keys.update(c.name.lower() for c in parent.find_all(exp.Column))
    return keys if found else None


def secret_columns(sql: str | None, columns: Sequence[str]) -> list[bool]:
    """Per result column: True when its values must be hidden (secret-named, computed from a secret column, or any
    column but the key of a key/value table filtered on a secret's name)."""
    flags = [is_secret_key(str(c)) for c in columns]
    if not sql or len(sql) > _MAX_SQL_CHARS:
        return flags
    try:
        tree = sqlglot.parse_one(sql, read="mysql")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError, ValueError):
        return flags
    key_columns = _secret_filter_columns(tree)
    if key_columns is not None:
        flags = [flag or str(c).lower() not in key_columns for flag, c in zip(flags, columns, strict=True)]
    tainted = _tainted_aliases(tree)
    outer = tree if isinstance(tree, exp.Select) else tree.find(exp.Select)
    selected = outer.expressions if isinstance(outer, exp.Select) else []
    positional = len(selected) == len(columns) and not any(isinstance(e, exp.Star) or e.find(exp.Star) for e in selected)
    for index, name in enumerate(columns):
        if str(name).lower() in tainted:
            flags[index] = True
        if positional:
            reads = selected[index].find_all(exp.Column)
            if any(is_secret_key(c.name) or c.name.lower() in tainted for c in reads):
                flags[index] = True
    return flags


def secret_cells(row: Sequence[Any]) -> set[int]:
    """Cells of a key/value row to hide: every other text cell when one cell names a secret ('smtp_password')."""
    names = {i for i, v in enumerate(row) if isinstance(v, str) and _NAME_CELL.fullmatch(v) and is_secret_key(v)}
    if not names:
        return set()
    return {i for i, v in enumerate(row) if i not in names and isinstance(v, str | bytes) and v not in ("", b"")}


class SecretColumns:
    """secret_columns with a bounded memo owned by this instance: it is a pure function of the statement and the
    column names, and the first look runs the same statements every run (sqlglot reads one in ~0.1-0.3 ms)."""

    MEMO_ENTRIES = 256
    MEMO_SQL_CHARS = 2048

    def __init__(self) -> None:
        self._memo: dict[tuple[str, tuple[str, ...]], tuple[bool, ...]] = {}

    def __call__(self, sql: str | None, columns: Sequence[str]) -> list[bool]:
        if not sql or len(sql) > self.MEMO_SQL_CHARS or sum(len(str(c)) for c in columns) > self.MEMO_SQL_CHARS:
            return secret_columns(sql, columns)  # only small statements and column lists are remembered
        key = (sql, tuple(columns))
        found = self._memo.get(key)
        if found is None:
            found = tuple(secret_columns(sql, columns))
            if len(self._memo) >= self.MEMO_ENTRIES:
                self._memo.clear()  # atomic: projection threads share the spec
            self._memo[key] = found
        return list(found)
