"""query_metrics: PromQL over Prometheus' HTTP API, or a PromQL subset over a folder of OpenMetrics files.

args.py (the tool's arguments and its window/step), promql.py (the query parsed and bounded before anything is
sent), units.py (a series' unit and kind from its metric name, metadata and the query), series.py (the series
model, its summary and downsampling), openmetrics.py + embedded.py + engine.py / engine_functions.py (the embedded
backend and its PromQL evaluation), prometheus.py (the HTTP backend), result.py (top N by peak, the raw result),
projection.py (the bounded view the agent sees) and first_look.py (the series that moved most, for the first look).
"""
