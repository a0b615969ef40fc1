"""Where the real servers of the integration tests are: Debian's packages unpacked by .ci/fetch-debs."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

DEBS = Path(os.environ.get("DIAG_TEST_DEBS", "/opt/diagbot-debs"))


def debian_binary(name: str) -> Path:
    """The path of `name` from the unpacked Debian packages (else PATH); the test fails naming the fix when missing."""
    unpacked = DEBS / "usr" / "bin" / name
    if unpacked.is_file() and os.access(unpacked, os.X_OK):
        return unpacked
    found = shutil.which(name)
    if found:
        return Path(found)
    pytest.fail(f"{name} not found under {DEBS}/usr/bin or on PATH: run .ci/fetch-debs (as .ci/run does)")


def debian_share(*parts: str) -> Path:
    """A data folder of the unpacked packages (e.g. alertmanager's default templates under usr/share/prometheus)."""
    return DEBS.joinpath("usr", "share", *parts)
