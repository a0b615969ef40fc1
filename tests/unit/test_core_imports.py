"""core/ stays independent of the Slack adapter: it never imports slack_bolt, slack_sdk, aiohttp.web or bot.

The console script that launches the adapter lives in entrypoints/, outside core/. Imports inside functions
count too: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "core"
FORBIDDEN = ("slack_bolt", "slack_sdk", "aiohttp.web", "bot")


def _imports(tree: ast.AST) -> list[tuple[str, bool]]:
    """(imported module, inside a function?) for every import in the tree."""
    found: list[tuple[str, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, ast.Import):
            found.extend((a.name, in_function) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, in_function))
            if node.module == "aiohttp":
                found.extend((f"aiohttp.{a.name}", in_function) for a in node.names)
        inner = in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(tree, False)
    return found


def _forbidden(name: str) -> bool:
    return any(name == f or name.startswith(f + ".") for f in FORBIDDEN)


def offenders(root: Path) -> list[str]:
    """Forbidden imports under root/core, at module level or inside functions."""
    bad = []
    for path in sorted((root / "core").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        for name, _lazy in _imports(ast.parse(path.read_text(), filename=rel)):
            if _forbidden(name):
                bad.append(f"{rel}: {name}")
    return bad


def test_core_never_imports_the_slack_adapter_stack() -> None:
    """No module under core/ imports slack_bolt, slack_sdk, aiohttp.web or bot."""
    assert list(CORE.rglob("*.py")), "core/ not found"
    assert offenders(CORE.parent) == []


def test_the_scanner_catches_forbidden_imports(tmp_path: Path) -> None:
    """The scan detects each forbidden form, at module level and inside functions (so the test can fail)."""
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "m.py").write_text(
        "import slack_sdk\nfrom slack_bolt.async_app import AsyncApp\nfrom aiohttp import web\n"
        "def f():\n    import bot.app\n")
    (tmp_path / "core" / "cli.py").write_text("from bot.serve import serve\ndef g():\n    from bot.serve import serve\n")
    (tmp_path / "core" / "ok.py").write_text("import aiohttp\nfrom aiohttp import ClientSession\nimport botocore\n")
    assert offenders(tmp_path) == ["core/cli.py: bot.serve", "core/cli.py: bot.serve",
                                   "core/m.py: slack_sdk", "core/m.py: slack_bolt.async_app",
                                   "core/m.py: aiohttp.web", "core/m.py: bot.app"]
