"""Observability: Prometheus metrics (one `Metrics` object per process, built in bootstrap) and log set-up."""

from core.observability.metrics import Metrics

__all__ = ("Metrics",)
