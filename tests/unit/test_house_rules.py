"""House rules checked on the source: no process-wide mutable state in `core/`, no function over 60 lines in
`core/` or `bot/` (issue 12). Each failure names file:line."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.paths import REPO_ROOT

MAX_FUNCTION_LINES = 60

# Calls that build a mutable container, a cache or a synchronisation object when evaluated at module level. A
# ContextVar is allowed: its value belongs to the running context (a task), not to the process.
MUTABLE_FACTORIES = frozenset({
    "dict", "list", "set", "bytearray", "defaultdict", "OrderedDict", "deque", "Counter", "ChainMap",
    "WeakValueDictionary", "WeakKeyDictionary", "WeakSet", "Queue", "LifoQueue", "PriorityQueue", "SimpleQueue",
    "Lock", "RLock", "Event", "Semaphore", "BoundedSemaphore", "Condition", "local", "Lru", "IndexCache",
    "GuardCaches",
})
MUTABLE_LITERALS = (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)
CACHE_DECORATORS = frozenset({"lru_cache", "cache"})

# Lead's files, being rewritten for issue 10: their long functions are split there; the lead clears these entries.
LONG_FUNCTION_ALLOWED: frozenset[tuple[str, str]] = frozenset()


def python_files(*packages: str) -> Iterator[Path]:
    """Every .py file below the named top-level packages."""
    for package in packages:
        yield from sorted((REPO_ROOT / package).rglob("*.py"))


def where(path: Path, node: ast.AST, root: Path) -> str:
    """file:line of a node, relative to the repository."""
    return f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}"


def last_name(node: ast.expr) -> str | None:
    """The last part of a (dotted) name: 'deque' for `collections.deque`; None for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def called_name(node: ast.expr) -> str | None:
    """The last name of what a call calls (`collections.deque(...)` -> 'deque'), None for anything else."""
    return last_name(node.func) if isinstance(node, ast.Call) else None


def is_mutable_value(value: ast.expr | None) -> bool:
    """A list/dict/set display or comprehension, or a call that builds a mutable container."""
    if value is None:
        return False
    if isinstance(value, MUTABLE_LITERALS):
        return True
    return called_name(value) in MUTABLE_FACTORIES


def decorator_name(node: ast.expr) -> str | None:
    """'lru_cache' for @lru_cache, @functools.lru_cache and @functools.lru_cache(maxsize=...)."""
    return last_name(node.func if isinstance(node, ast.Call) else node)


def module_state_offences(path: Path, root: Path = REPO_ROOT) -> Iterator[str]:
    """Module-level mutable assignments, `global` statements and module-level caches of one file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and is_mutable_value(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = ", ".join(ast.unparse(target) for target in targets)
            yield f"{where(path, node, root)}: module-level mutable value {names}"
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for decorator in node.decorator_list:
                if decorator_name(decorator) in CACHE_DECORATORS:
                    yield f"{where(path, decorator, root)}: process-wide cache @{decorator_name(decorator)} on {node.name}"
    for found in ast.walk(tree):
        if isinstance(found, ast.Global):
            yield f"{where(path, found, root)}: global {', '.join(found.names)}"


def long_functions(path: Path) -> Iterator[tuple[str, str]]:
    """(file:line: what, qualified name) for every def longer than MAX_FUNCTION_LINES, decorators included."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    relative = str(path.relative_to(REPO_ROOT))

    def visit(node: ast.AST, prefix: str) -> Iterator[tuple[str, str]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                    length = (child.end_lineno or child.lineno) - first + 1
                    if length > MAX_FUNCTION_LINES:
                        yield f"{relative}:{first}: {name} is {length} lines", name
                yield from visit(child, f"{name}.")
            else:
                yield from visit(child, prefix)

    yield from visit(tree, "")


def test_no_module_level_mutable_state_in_core() -> None:
    """`core/` keeps no process-wide mutable state: state belongs to an instance (STYLE: state belongs to an
    instance)."""
    offences = [offence for path in python_files("core") for offence in module_state_offences(path)]
    assert not offences, "module-level mutable state in core/ (use a tuple, frozenset or MappingProxyType, or move "\
        "it into an instance):\n" + "\n".join(offences)


def test_no_function_over_sixty_lines() -> None:
    """No function or method in `core/` or `bot/` is longer than 60 lines (decorators and docstring included)."""
    offences = [
        message for path in python_files("core", "bot") for message, name in long_functions(path)
        if (str(path.relative_to(REPO_ROOT)), name) not in LONG_FUNCTION_ALLOWED
    ]
    assert not offences, f"functions over {MAX_FUNCTION_LINES} lines (split them into named helpers):\n" + \
        "\n".join(offences)


def test_the_scanner_sees_what_it_forbids(tmp_path: Path) -> None:
    """The scanner flags each forbidden form and passes the allowed immutable ones."""
    source = tmp_path / "sample.py"
    source.write_text(
        "import functools, re, types\n"
        "from typing import Final\n"
        "A = []\n"
        "B: dict[str, int] = {}\n"
        "C = {x for x in 'ab'}\n"
        "D = collections.defaultdict(list)\n"
        "E = (1, 2)\n"
        "F = frozenset({'a'})\n"
        "G = types.MappingProxyType({'a': 1})\n"
        "H: Final = re.compile('x')\n"
        "@functools.lru_cache(maxsize=8)\n"
        "def f() -> None:\n"
        "    global A\n",
        encoding="utf-8",
    )
    offences = [offence.split(": ", 1)[0] for offence in module_state_offences(source, root=tmp_path)]
    assert offences == ["sample.py:3", "sample.py:4", "sample.py:5", "sample.py:6", "sample.py:11", "sample.py:13"]
