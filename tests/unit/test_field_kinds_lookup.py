"""QuantityKinds.of (compiled once per spec) and ToolSpec.leaves (a list-building walk) answer exactly as the plain
definitions they replace for speed: a scan of the `*` paths in declaration order, and a path-splitting walk."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from core.tools.contract import FieldKind, FieldQuantity, Leaf, QuantityKinds, ToolSpec

_SEGMENTS = st.sampled_from(["a", "b", "points", "v", "*", "0", "1", "12", "²", "٣", "a.b", "3"])
_KINDS = list(FieldKind)


def _scan(kinds: QuantityKinds, path: str) -> FieldQuantity:
    found = kinds.fields.get(path)
    if found is None and any(part.isdigit() for part in path.split(".")):
        parts = path.split(".")
        found = next((kind for pattern, kind in kinds.fields.items()
                      if len(pattern.split(".")) == len(parts)
                      and all(p == q or (p == "*" and q.isdigit()) for p, q in zip(pattern.split("."), parts, strict=True))),
                     None)
    return found or kinds.default


@given(st.lists(st.tuples(st.lists(_SEGMENTS, min_size=1, max_size=4), st.sampled_from(_KINDS)), max_size=8),
       st.lists(st.lists(_SEGMENTS, min_size=1, max_size=4), min_size=1, max_size=12))
def test_of_answers_as_the_scan_in_declaration_order(fields: list[tuple[list[str], FieldKind]],
                                                      paths: list[list[str]]) -> None:
    kinds = QuantityKinds({".".join(p): FieldQuantity(k, unit=str(i)) for i, (p, k) in enumerate(fields)})
    for parts in paths:
        path = ".".join(parts)
        assert kinds.of(path) is _scan(kinds, path), path


def test_the_metrics_paths_resolve_like_the_scan() -> None:
    kinds = QuantityKinds({"points.*.1": FieldQuantity(FieldKind.NUMBER), "points.*.0": FieldQuantity(FieldKind.TIMESTAMP),
                           "*.*.*": FieldQuantity(FieldKind.COUNT)})
    assert kinds.of("points.17.0").kind is FieldKind.TIMESTAMP
    assert kinds.of("points.17.1").kind is FieldKind.NUMBER
    assert kinds.of("points.17.2").kind is FieldKind.GUESS  # `*` is a list index only
    assert kinds.of("4.17.2").kind is FieldKind.COUNT
    assert kinds.of("points.x.1").kind is FieldKind.GUESS
    assert kinds.of("points.².1").kind is FieldKind.NUMBER  # str.isdigit digits, as the scan


def _plain_walk(item: int, path: str, value: Any) -> Iterator[Leaf]:
    if isinstance(value, Mapping):
        for key, inner in value.items():
            yield from _plain_walk(item, f"{path}.{key}" if path else str(key), inner)
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _plain_walk(item, f"{path}.{index}" if path else str(index), inner)
    else:
        key = next((p for p in reversed(path.split(".")) if not p.isdigit()), "")
        yield Leaf(item, path, key, value)


_JSON = st.recursive(st.none() | st.integers() | st.text(max_size=3),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_SEGMENTS | st.text(max_size=3), inner,
                                                                                  max_size=3), max_leaves=12)


@given(st.lists(_JSON, max_size=4))
def test_leaves_walk_as_the_plain_definition(items: list[Any]) -> None:
    spec = ToolSpec.__new__(ToolSpec)
    projection = {spec.items_field: items}
    expected = [leaf for i, item in enumerate(items) for leaf in _plain_walk(i, "", item)]
    assert list(spec.leaves(projection)) == expected
