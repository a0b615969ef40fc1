"""The import graph of core/ has no cycle (issue 18): every module-level import counts, those only for type checking
included, so each layer can be read, tested and replaced from the bottom up."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.paths import REPO_ROOT

CORE = REPO_ROOT / "core"


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _module_level(tree: ast.Module) -> Iterator[ast.stmt]:
    """Statements at module level, and inside module-level `if` blocks (TYPE_CHECKING) and `try` blocks."""
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop(0)
        yield node
        if isinstance(node, ast.If | ast.Try):
            stack[:0] = [*node.body, *node.orelse, *getattr(node, "finalbody", []),
                         *(s for h in getattr(node, "handlers", []) for s in h.body)]


def imports_of(path: Path, modules: frozenset[str]) -> set[str]:
    """The core modules `path` imports at module level (`from core.a import b` is core.a.b when that is a module)."""
    found: set[str] = set()
    for node in _module_level(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name in modules}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module in modules:
            for alias in node.names:
                inner = f"{node.module}.{alias.name}"
                found.add(inner if inner in modules else node.module)
    return found


def import_graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in sorted(CORE.rglob("*.py"))}
    modules = frozenset(paths)
    return {name: imports_of(path, modules) - {name} for name, path in paths.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path of modules (first == last), or None."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (cycle := visit(nxt)) is not None:
                return cycle
        state[node] = 2
        path.pop()
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)) is not None:
            return cycle
    return None


def test_core_has_no_import_cycle() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle in core/: " + " -> ".join(cycle or [])


def test_the_cycle_finder_sees_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_run_kernel_sits_at_the_base() -> None:
    """core/run.py imports only the contracts: every layer may use it without an upward arrow."""
    assert {m for m in import_graph()["core.run"] if not m.startswith("core.contracts")} == set()
