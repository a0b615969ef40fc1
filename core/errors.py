"""Exceptions with a stable code, used where a failure must become a clear, safe message."""

from __future__ import annotations


class ToolFailure(Exception):
    """A tool backend failed in an expected way; becomes an ERROR projection with this code and message."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
