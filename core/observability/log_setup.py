"""Process log configuration, called once by the `diagbot` entrypoint: text or one JSON object per line.

INFO is for what an operator needs (listening, connected, a run stopped and why); it never carries payloads,
prompts, reasoning, or the model/HTTP clients' per-request lines (those libraries log each request at INFO).
"""

from __future__ import annotations

import logging
import sys
from typing import Literal, TextIO

from pythonjsonlogger.json import JsonFormatter

from core.observability.log_context import RunFieldsFilter

LogFormat = Literal["text", "json"]
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Libraries that log one line per HTTP request at INFO: kept at WARNING so INFO stays per-run, not per-request.
CHATTY_LOGGERS = ("httpx", "httpx2", "httpcore", "httpx_aiohttp", "openai", "openai._base_client", "aiohttp.access",
                  "slack_sdk.web")


def json_formatter() -> logging.Formatter:
    """One JSON object per line: time, level, logger, message, run_id, session (+ any `extra=` fields)."""
    return JsonFormatter(
        "{levelname}{name}{message}",
        style="{",
        timestamp="time",  # ISO-8601 UTC
        rename_fields={"levelname": "level", "name": "logger"},
        defaults={"run_id": None, "session": None},
        json_ensure_ascii=False,
    )


def configure_logging(level: int, log_format: LogFormat = "text", stream: TextIO | None = None) -> logging.Handler:
    """Replace the root logger's handlers with one stream handler in the chosen format; returns that handler."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.addFilter(RunFieldsFilter())
    handler.setFormatter(json_formatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for name in CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(level if level <= logging.DEBUG else logging.WARNING)
    return handler
