"""The guard owns its state: no module-level mutable state in core/guard, caches per EvidenceGuard instance."""

from __future__ import annotations

import functools
import importlib
import pkgutil
import types
from typing import Any

import pytest

import core.guard
from core.guard.cache import Lru
from core.guard.evidence_guard import EvidenceGuard
from core.guard.rules import load_rules
from core.stores.canonical import InMemoryCanonicalStore

IMMUTABLE = (str, bytes, int, float, bool, complex, type(None), frozenset, tuple, range, types.MappingProxyType)


def _guard_modules() -> list[types.ModuleType]:
    names = [m.name for m in pkgutil.walk_packages(core.guard.__path__, "core.guard.")]
    return [importlib.import_module(n) for n in names]


def _mutable(value: Any) -> bool:
    if isinstance(value, (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType)):
        return False
    if isinstance(value, functools._lru_cache_wrapper):
        return True
    if isinstance(value, IMMUTABLE):
        return isinstance(value, tuple) and any(_mutable(v) for v in value)
    if isinstance(value, (dict, list, set, bytearray, Lru)):
        return True
    # typing constructs, compiled regexes, TypeAdapters, enums, dataclass type aliases: no state of ours
    return not (
        type(value).__module__ in {"typing", "re", "pydantic.type_adapter", "typing_extensions", "enum"}
        or hasattr(value, "__origin__")
        or type(value).__name__ in {"Pattern", "TypeAdapter", "TypeVar", "ParamSpec", "Enum"}
    )


def test_no_module_level_mutable_state_in_core_guard() -> None:
    """Every module global of core/guard is immutable (no dicts, lists, sets, caches, lru_cache wrappers)."""
    found = [
        f"{module.__name__}.{name}"
        for module in _guard_modules()
        for name, value in vars(module).items()
        if not name.startswith("__") and getattr(value, "__module__", module.__name__) in {module.__name__, None}
        and _mutable(value)
    ]
    found += [
        f"{module.__name__}.{name}"
        for module in _guard_modules()
        for name, value in vars(module).items()
        if isinstance(value, (dict, list, set, Lru, functools._lru_cache_wrapper)) and not name.startswith("__")
    ]
    assert sorted(set(found)) == []


def test_clear_caches_is_gone() -> None:
    """There is nothing process-wide to clear any more."""
    import core.guard.evidence_guard as module

    assert not hasattr(module, "clear_caches")


async def test_each_guard_has_its_own_caches() -> None:
    """Two guards never share kept answers: a second guard starts cold."""
    from core.contracts.draft import DiagnosisDraft
    from tests.unit.test_guard_codes import RUN, run_records, valid_draft

    store = InMemoryCanonicalStore()
    for record in run_records():
        await store.put(record)
    first, second = EvidenceGuard(store, load_rules()), EvidenceGuard(store, load_rules())
    assert (await first.check(RUN, DiagnosisDraft.model_validate(valid_draft()))).valid
    assert len(first._caches.projections) > 0
    assert len(second._caches.projections) == 0
    assert first._caches.projections is not second._caches.projections


def test_lru_is_bounded_and_drops_the_least_recently_used() -> None:
    """The guard's one cache type keeps at most `size` entries; a get refreshes an entry."""
    lru: Lru[str, int] = Lru(2)
    lru.put("a", 1)
    lru.put("b", 2)
    assert lru.get("a") == 1  # "b" is now the least recently used
    lru.put("c", 3)
    assert lru.get("b") is None
    assert (lru.get("a"), lru.get("c")) == (1, 3)
    assert lru.get_or_make("d", lambda: 4) == 4
    assert len(lru) == 2
    with pytest.raises(ValueError, match="at least one"):
        Lru(0)
