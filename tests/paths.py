"""Paths of the source checkout, for tests only (the product finds its files through importlib.resources)."""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
