"""query_metrics: PromQL over Prometheus' HTTP API, or plain selectors over a folder of OpenMetrics files.

args.py (the tool's arguments and its window/step), promql.py (the query parsed and bounded before anything is
sent), units.py (a series' unit and kind from its metric name, metadata and the query), series.py (the series
model, its summary and downsampling), openmetrics.py + embedded.py (the embedded backend), prometheus.py (the HTTP
backend), result.py (top N by peak, the raw result) and projection.py (the bounded view the agent sees).
"""
