"""The local fallback claim set is bounded by count and key length, and forgets claims when they expire."""

from __future__ import annotations

from bot.local_claims import MAX_KEY_CHARS, LocalClaims


def test_claims_expire_and_the_oldest_are_pushed_out() -> None:
    """First claim wins until its TTL passes; past max_items the oldest claims are forgotten first."""
    now = [0.0]
    claims = LocalClaims(ttl_s=10, max_items=3, clock=lambda: now[0])
    assert claims.claim("a")
    assert not claims.claim("a")
    now[0] = 5
    for key in "bcd":
        assert claims.claim(key)
    assert len(claims) == 3
    assert not claims.has("a")  # pushed out by newer claims
    now[0] = 15.5
    assert not claims.has("b")  # expired
    assert claims.claim("b")


def test_keys_are_clipped_so_memory_stays_bounded() -> None:
    """A huge key costs at most MAX_KEY_CHARS characters, and still dedupes."""
    claims = LocalClaims(ttl_s=10)
    key = "x" * 100_000
    assert claims.claim(key)
    assert not claims.claim(key)
    assert len(next(iter(claims._claims))) == MAX_KEY_CHARS
