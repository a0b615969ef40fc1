"""Exceptions with a stable code, used where a failure must become a clear, safe message."""

from __future__ import annotations


class ToolFailure(Exception):
    """A tool backend failed in an expected way; becomes an ERROR projection with this code and message."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class StoreUnavailable(Exception):
    """A backing store (Redis, SQL) could not be reached; callers turn it into an ERROR or a FAILURE."""

    def __init__(self, store: str, reason: str, *, fix: str = "") -> None:
        super().__init__(f"{store} unavailable: {reason}")
        self.store = store
        self.reason = reason
        self.fix = fix
