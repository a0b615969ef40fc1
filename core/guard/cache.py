"""The one bounded cache type of the guard: a small LRU map, owned by one EvidenceGuard (values must be pure
functions of their keys, so a hit answers exactly like a fresh computation)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Lru(Generic[K, V]):
    """At most `size` entries; the least recently used is dropped. Made for one event loop; a concurrent eviction
    only costs a miss, never a wrong value."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError("an Lru keeps at least one entry")
        self.size = size
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        """The kept value, or None."""
        found = self._items.get(key)
        if found is not None:
            try:  # noqa: SIM105  (not contextlib.suppress: this runs a few hundred times a check)
                self._items.move_to_end(key)
            except KeyError:
                pass
        return found

    def put(self, key: K, value: V) -> V:
        """Keep a value (dropping the least recently used beyond `size`) and return it."""
        self._items[key] = value
        while len(self._items) > self.size:
            try:  # noqa: SIM105
                self._items.popitem(last=False)
            except KeyError:
                pass
        return value

    def get_or_make(self, key: K, make: Callable[[], V]) -> V:
        """The kept value, or `make()` kept and returned."""
        found = self.get(key)
        return self.put(key, make()) if found is None else found

    def __len__(self) -> int:
        return len(self._items)
