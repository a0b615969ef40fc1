"""`diagbot feedback --since 7d [--format csv|json]`: every 👍/👎 cast in the period, one row per (run, user)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from pytimeparse.timeparse import timeparse as parse_age

from core.contracts.feedback import Feedback

FIELDS = ("at", "run_id", "team", "user", "vote")
# OWASP CSV injection: a cell a spreadsheet would read as a formula (= + - @, or a leading tab / carriage return)
# gets a leading single quote, which makes it text; the csv module quotes and escapes the rest.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(cell: str) -> str:
    """The cell as text a spreadsheet will not evaluate."""
    return "'" + cell if cell.startswith(FORMULA_STARTS) else cell


def since_of(age: str, now: datetime | None = None) -> datetime:
    """The start of the period `age` ago ('7d', '12h', '2w'); ValueError for anything else."""
    seconds = parse_age(age.strip()) if age else None
    if seconds is None or seconds <= 0:
        raise ValueError(f"--since {age!r}: give an age such as 7d, 12h or 2w")
    return (now or datetime.now(UTC)) - timedelta(seconds=float(seconds))


def _row(vote: Feedback) -> dict[str, str]:
    return {"at": vote.at.isoformat(timespec="seconds"), "run_id": vote.run_id, "team": vote.team, "user": vote.user,
            "vote": vote.vote.value}


def export(votes: Sequence[Feedback], fmt: str) -> str:
    """The votes as CSV (with a header row) or as a JSON array of objects."""
    if fmt == "json":
        return json.dumps([_row(v) for v in votes], ensure_ascii=False, indent=2)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=FIELDS)  # RFC 4180 CRLF rows: a CR or LF inside a cell gets quoted
    writer.writeheader()
    writer.writerows({key: spreadsheet_safe(value) for key, value in _row(v).items()} for v in votes)
    return out.getvalue().rstrip("\r\n")
