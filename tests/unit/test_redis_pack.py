"""LeanConnection.pack_command puts on the wire exactly what redis-py's pack_command does, and raises what it raises."""

from __future__ import annotations

from typing import Any

import pytest
import redis.asyncio as aioredis
from hypothesis import given, settings
from hypothesis import strategies as st
from redis.exceptions import DataError

from core.stores.redis_pool import LeanConnection

_ARG = st.one_of(st.text(max_size=30), st.binary(max_size=30), st.integers(-(2**70), 2**70), st.floats(),
                 st.text(min_size=6000, max_size=7000), st.just(memoryview(b"view")), st.just(bytearray(b"ba")))
_NAME = st.one_of(st.sampled_from(["GET", "EVALSHA", "SCRIPT LOAD", "CONFIG GET"]), st.text(max_size=12),
                  st.sampled_from([b"GET", b"CLIENT SETINFO"]))


def _wire(parts: list[bytes]) -> bytes:
    return b"".join(bytes(part) for part in parts)


@settings(max_examples=400, deadline=None)
@given(_NAME, st.lists(_ARG, max_size=12))
def test_the_bytes_are_redis_pys(name: str | bytes, args: list[Any]) -> None:
    lean, plain = LeanConnection(), aioredis.Connection()
    assert _wire(lean.pack_command(name, *args)) == _wire(plain.pack_command(name, *args))


def test_what_redis_py_refuses_is_refused_alike() -> None:
    for bad in (True, None, object()):
        with pytest.raises(DataError):
            LeanConnection().pack_command("SET", "k", bad)  # type: ignore[arg-type]
    with pytest.raises(UnicodeEncodeError):
        LeanConnection().pack_command("SET", "k", "\ud800")


def test_another_encoding_is_redis_pys() -> None:
    lean, plain = LeanConnection(encoding="latin-1"), aioredis.Connection(encoding="latin-1")
    assert _wire(lean.pack_command("SET", "k", "é")) == _wire(plain.pack_command("SET", "k", "é"))
