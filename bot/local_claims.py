"""A bounded, expiring set of claims in this process: the fallback when the shared store cannot be reached.

Bounded by count (oldest claims are forgotten first) and, since keys are clipped to MAX_KEY_CHARS, by bytes too:
at the defaults about 10,000 x 200 characters, 2 MB at most.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

MAX_KEY_CHARS = 200
DEFAULT_MAX_ITEMS = 10_000


class LocalClaims:
    """First claim of a key wins until it expires or is pushed out by newer claims."""

    def __init__(self, ttl_s: float, max_items: int = DEFAULT_MAX_ITEMS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl_s = ttl_s
        self._max_items = max_items
        self._clock = clock
        self._claims: OrderedDict[str, float] = OrderedDict()

    def __len__(self) -> int:
        return len(self._claims)

    def _expire(self) -> None:
        now = self._clock()
        while self._claims:
            key, expires_at = next(iter(self._claims.items()))
            if expires_at > now:
                break
            del self._claims[key]

    def has(self, key: str) -> bool:
        """True while `key` is claimed here."""
        self._expire()
        return key[:MAX_KEY_CHARS] in self._claims

    def claim(self, key: str) -> bool:
        """Claim `key`; False when it was already claimed here."""
        self._expire()
        key = key[:MAX_KEY_CHARS]
        if key in self._claims:
            return False
        self._claims[key] = self._clock() + self._ttl_s  # every entry has the same TTL: insertion order is expiry order
        while len(self._claims) > self._max_items:
            self._claims.popitem(last=False)
        return True
