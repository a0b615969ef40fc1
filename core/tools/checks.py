"""Checks shared by toolsets: a folder holds the files a backend reads.

A backend that is down is a warning: the server starts, the tool answers ERROR, readiness names it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from core.health.result import CheckResult, Level


def _first(folder: Path, pattern: str) -> tuple[bool, int]:
    """(folder exists, number of matching files, counting at most 10 000)."""
    if not folder.is_dir():
        return False, 0
    count = 0
    for _ in folder.rglob(pattern):
        count += 1
        if count >= 10_000:
            break
    return True, count


async def check_folder(name: str, setting: str, folder: Path, pattern: str) -> CheckResult:
    """The folder exists and holds files matching `pattern` (a WARN naming the setting otherwise)."""
    exists, count = await asyncio.to_thread(_first, Path(folder), pattern)
    if not exists:
        return CheckResult(name=name, level=Level.WARN, detail=f"{setting} {folder} is not a folder",
                           fix=f"set {setting} to the folder holding the {pattern} files")
    if count == 0:
        return CheckResult(name=name, level=Level.WARN, detail=f"{setting} {folder} has no {pattern} files",
                           fix=f"put {pattern} files under {folder} or point {setting} elsewhere")
    return CheckResult(name=name, level=Level.OK, detail=f"{setting} {folder}: {count} {pattern} files")
