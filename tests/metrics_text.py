"""Reading a Prometheus text exposition in tests (parsed by prometheus_client's own parser)."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families


def sample(text: str, name: str, **labels: str) -> float:
    """The value of the one sample `name{labels...}` (labels not given are ignored); 0.0 when absent."""
    total = 0.0
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                total += s.value
    return total
