"""Conversion of database values into JSON scalars, and of driver errors into safe one-line messages."""

from __future__ import annotations

import datetime as dt
import re
import uuid
from decimal import Decimal
from typing import Any

MAX_BINARY_HEX = 64
_CLASS_PREFIX = re.compile(r"^<class '[^']+'>:\s*")
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE)


def to_json_scalar(value: Any) -> Any:
    """A JSON-safe scalar for one database value (Decimal -> str keeps its exact digits)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else str(value)
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        return raw.hex() if len(raw) <= MAX_BINARY_HEX else f"<binary {len(raw)} bytes>"
    if isinstance(value, uuid.UUID):
        return str(value)
    return str(value)


def safe_error_text(exc: BaseException, secrets: tuple[str, ...] = ()) -> str:
    """The first line of a driver error, without class prefixes, URLs or the given secrets, at most 300 chars."""
    inner = getattr(exc, "orig", None) or exc
    text = str(inner).strip().splitlines()[0] if str(inner).strip() else type(inner).__name__
    text = _CLASS_PREFIX.sub("", text)
    text = _URL.sub("<url>", text)
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text[:300]
