"""Moved to core/run.py (the run kernel); these names stay importable from here for code written before the move."""

from core.run import CancelScope, CancelSignal, RunContext

__all__ = ("CancelScope", "CancelSignal", "RunContext")
