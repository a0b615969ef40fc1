"""A node's steps over many times at once (what a subquery asks its inner expression) is exactly the per-time
evaluation the engine falls back to: the same points, series in order of first appearance, the same duplicate-labelset
error when two relabelled series meet at one time, and they merge into one when they do not."""

from __future__ import annotations

from array import array

from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import ToolFailure
from core.tools.metrics import engine
from core.tools.metrics.series import Series

SAMPLE_TIMES = st.lists(st.integers(0, 60).map(lambda k: 1_000_000.0 + 30 * k), max_size=4, unique=True)
SERIES = st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from(["x", "y"]), SAMPLE_TIMES),
                  min_size=1, max_size=5, unique_by=lambda s: s[:2])


def _series(name: str, pool: str, times: list[float]) -> Series:
    ordered = sorted(times)
    return Series(name, {"pool": pool}, array("d", ordered), array("d", (t % 7 for t in ordered)))


def _per_time(node: engine.Node, times: list[float]) -> engine.Matrix | str:
    try:
        return engine.Node.steps(node, times, engine.Budget())
    except ToolFailure as exc:
        return exc.code


def _at_once(node: engine.Node, times: list[float]) -> engine.Matrix | str:
    try:
        return node.steps(times, engine.Budget())
    except ToolFailure as exc:
        return exc.code


@settings(max_examples=300, deadline=None)
@given(SERIES, st.integers(0, 600), st.sampled_from([15.0, 60.0, 90.0]), st.sampled_from(["pool", "__name__", "none"]),
       st.booleans())
def test_steps_at_once_are_the_steps_one_by_one(specs: list[tuple[str, str, list[float]]], offset: int, step: float,
                                                dropped: str, apart: bool) -> None:
    """apart: each series' samples an hour after the previous one's, so relabelled series merge rather than meet."""
    shift = 3600.0 if apart else 0.0
    select = engine.Select(tuple(_series(name, pool, [t + shift * i for t in times])
                                 for i, (name, pool, times) in enumerate(specs)), float(offset))
    times = [1_000_000.0 + step * k for k in range(int((2400 + shift * len(specs)) // step))]
    renamed = engine.LabelReplace(select, ("pool", "", "", "")) if dropped == "pool" else \
        engine.LabelReplace(select, ("m", "$1", "__name__", "(.+)"))
    nodes: list[engine.Node] = [select, renamed, engine.Call("abs", select),
                                engine.Call("ln", engine.LabelReplace(select, ("pool", "", "", "")))]
    if dropped == "none":
        nodes.append(engine.LabelReplace(engine.Call("abs", select), ("pool", "z", "", "")))
    for node in nodes:
        expected = _per_time(node, times)
        got = _at_once(node, times)
        if isinstance(expected, dict) and isinstance(got, dict):
            assert list(got.items()) == list(expected.items())  # the same order too
        else:
            assert got == expected
