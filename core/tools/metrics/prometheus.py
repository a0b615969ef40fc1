"""The Prometheus query_metrics backend: the HTTP API (`/api/v1/query_range`, `/api/v1/query`), as Thanos, Mimir and
VictoriaMetrics also speak it (https://prometheus.io/docs/prometheus/latest/querying/api/).

The checked query is POSTed form-encoded with Prometheus' own `timeout` (so the server stops evaluating when we stop
waiting) and `limit` (servers that know it cut the answer at MAX_SERIES_READ + 1 series). The answer is read up to
MAX_RESPONSE_BYTES and parsed off the event loop. Metric metadata (`/api/v1/metadata`, type and unit) is asked
concurrently and may fail without failing the call.

Failures are named by cause, never with the URL or its credentials: METRICS_UNREACHABLE (no connection),
METRICS_TIMEOUT (our wait, or Prometheus' `timeout` errorType), METRICS_UNAUTHORIZED (401/403), METRICS_BAD_QUERY
(400 bad_data, with Prometheus' message), METRICS_TOO_MANY_SAMPLES (422 from `--query.max-samples`),
METRICS_QUERY_FAILED (other 422 execution errors), METRICS_UNAVAILABLE (503 and other statuses),
METRICS_TOO_MANY_SERIES, METRICS_RESPONSE_TOO_LARGE and METRICS_BAD_RESPONSE (an answer that is not Prometheus' JSON).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import aiohttp
import orjson
from pydantic import SecretStr
from yarl import URL

from core.errors import ToolFailure
from core.tools.logs.backend import LazySession, clean_error_text, split_url
from core.tools.metrics.args import Window
from core.tools.metrics.backend import MAX_SERIES_READ, Fetched
from core.tools.metrics.promql import CheckedQuery
from core.tools.metrics.series import Series
from core.tools.metrics.units import Types, expression_unit, metric_unit

DEFAULT_TIMEOUT_S = 10.0
MAX_RESPONSE_BYTES = 32 * 1024 * 1024
MAX_METADATA_BYTES = 256 * 1024
_READ_CHUNK = 1 << 20
_CREDENTIALS_HINT = "check DIAG_PROMETHEUS_TOKEN or the user:password in DIAG_PROMETHEUS_URL"


def _seconds_param(seconds: float) -> str:
    return f"{max(0.001, seconds):.3f}".rstrip("0").rstrip(".") + "s"


class PrometheusMetrics:
    """query_metrics over DIAG_PROMETHEUS_URL."""

    source = "prometheus"

    def __init__(self, url: str, token: SecretStr | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
                 max_response_bytes: int = MAX_RESPONSE_BYTES) -> None:
        self.base, basic = split_url(url, "DIAG_PROMETHEUS_URL", "http://prometheus:9090")
        password = URL(url).password
        self._secrets = [s for s in (password, basic.removeprefix("Basic ") if basic else None) if s]
        headers = {"Accept": "application/json"}
        key = token.get_secret_value() if token is not None else ""
        if key:
            headers["Authorization"] = f"Bearer {key}"
            self._secrets.append(key)
        elif basic is not None:
            headers["Authorization"] = basic
        self.timeout_s = max(0.1, timeout_s)
        self._max_bytes = max_response_bytes
        self._http = LazySession(headers, self.timeout_s + 1.0)

    async def aclose(self) -> None:
        await self._http.aclose()

    # ---- queries ---------------------------------------------------------------------------------------------

    async def fetch(self, query: CheckedQuery, window: Window) -> Fetched:
        form = {"query": query.text, "timeout": _seconds_param(self.timeout_s), "limit": str(MAX_SERIES_READ + 1)}
        if window.instant:
            path = "/api/v1/query"
            form["time"] = f"{window.end.timestamp():.3f}"
        else:
            path = "/api/v1/query_range"
            form |= {"start": f"{window.start.timestamp():.3f}", "end": f"{window.end.timestamp():.3f}",
                     "step": _seconds_param(window.step_s)}
        metadata = asyncio.ensure_future(self._metadata(query.metric_names))
        try:
            status, body = await self._post(path, form)
        finally:
            if not metadata.done():
                await asyncio.wait([metadata], timeout=1.0)
            types = metadata.result() if metadata.done() and not metadata.cancelled() else {}
            metadata.cancel()
        parsed = await asyncio.to_thread(_parse_answer, status, body, self._clean)
        series, skipped, warnings = parsed
        if len(series) > MAX_SERIES_READ:
            raise ToolFailure("METRICS_TOO_MANY_SERIES",
                              f"The query returns more than {MAX_SERIES_READ:,} series; aggregate it (sum by (...)) "
                              "or add label matchers.")
        if query.plain is not None:
            units = [metric_unit(s.name, *types.get(s.name, ("", ""))) for s in series]
        else:
            unit = expression_unit(query.expr, types)
            units = [unit] * len(series)
        notes: dict[str, Any] = {"backend": "prometheus", "response_bytes": len(body)}
        if skipped:
            notes["native_histogram_series_skipped"] = skipped
        return Fetched(series, units, notes, warnings)

    async def build_info(self) -> dict[str, Any]:
        """`/api/v1/status/buildinfo`'s data (version, revision, ...), for `diagbot check`."""
        status, body = await self._get("/api/v1/status/buildinfo", {})
        data = _envelope(status, body, self._clean)
        return data if isinstance(data, dict) else {}

    async def _metadata(self, names: tuple[str, ...]) -> Types:
        """metric name -> (type, unit) for the query's metrics; {} on any failure (metadata is a hint)."""
        out: dict[str, tuple[str, str]] = {}
        for name in names[:5]:
            try:
                status, body = await self._get("/api/v1/metadata", {"metric": name, "limit": "1"},
                                               MAX_METADATA_BYTES)
                data = _envelope(status, body, self._clean)
            except ToolFailure:
                return out
            entries = data.get(name) if isinstance(data, dict) else None
            if isinstance(entries, list) and entries and isinstance(entries[0], dict):
                out[name] = (str(entries[0].get("type") or ""), str(entries[0].get("unit") or ""))
        return out

    # ---- HTTP ------------------------------------------------------------------------------------------------

    async def _post(self, path: str, form: Mapping[str, str]) -> tuple[int, bytes]:
        session = self._http.get()
        return await self._read(session.post(self.base + path, data=dict(form)), self._max_bytes)

    async def _get(self, path: str, params: Mapping[str, str], limit: int | None = None) -> tuple[int, bytes]:
        session = self._http.get()
        return await self._read(session.get(self.base + path, params=dict(params)), limit or self._max_bytes)

    async def _read(self, request: Any, limit: int) -> tuple[int, bytes]:
        try:
            async with asyncio.timeout(self.timeout_s + 1.0):
                async with request as response:
                    status = response.status
                    body = await _read_bounded(response, limit)
        except TimeoutError as exc:
            raise ToolFailure("METRICS_TIMEOUT",
                              f"Prometheus did not answer within {self.timeout_s:.1f} s (DIAG_PROMETHEUS_TIMEOUT_S); "
                              "this call is not evidence.") from exc
        except aiohttp.ClientError as exc:
            raise ToolFailure("METRICS_UNREACHABLE",
                              f"Prometheus is unreachable ({type(exc).__name__}); this call is not evidence.") from exc
        if status in (401, 403):
            raise ToolFailure("METRICS_UNAUTHORIZED",
                              f"Prometheus refused the credentials (HTTP {status}); {_CREDENTIALS_HINT}.")
        return status, body

    def _clean(self, text: str) -> str:
        return clean_error_text(text, self._secrets, [(self.base, "<prometheus>")])


async def _read_bounded(response: aiohttp.ClientResponse, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(_READ_CHUNK):
        size += len(chunk)
        if size > limit:
            raise ToolFailure("METRICS_RESPONSE_TOO_LARGE",
                              f"Prometheus' answer exceeds {limit // 2**20} MiB; aggregate the query (sum by (...)), "
                              "add label matchers or use a larger step.")
        chunks.append(chunk)
    return b"".join(chunks)


def _envelope(status: int, body: bytes | Any, clean: Any) -> Any:
    """The `data` of a success answer (the body, or its decoded JSON); a failure answer or garbage becomes the
    ToolFailure of its cause."""
    answer = _decoded(body) if isinstance(body, bytes) else body
    if not isinstance(answer, dict) or answer.get("status") not in ("success", "error"):
        if status >= 500 or status == 429:
            raise ToolFailure("METRICS_UNAVAILABLE", f"Prometheus answered HTTP {status}; this call is not evidence.")
        raise ToolFailure("METRICS_BAD_RESPONSE",
                          f"Prometheus' answer (HTTP {status}) is not Prometheus API JSON; this call is not evidence.")
    if answer["status"] == "error" or status != 200:
        raise _failure(status, str(answer.get("errorType") or ""), clean(str(answer.get("error") or "")))
    return answer.get("data")


def _decoded(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return None


def _failure(status: int, error_type: str, message: str) -> ToolFailure:
    if error_type == "timeout" or "timed out" in message or "context deadline" in message:
        return ToolFailure("METRICS_TIMEOUT", f"Prometheus stopped the query: {message}")
    if "too many samples" in message:
        return ToolFailure("METRICS_TOO_MANY_SAMPLES",
                           f"Prometheus refused to load that many samples ({message}); use a larger step, a shorter "
                           "window or aggregate the query.")
    if status == 400 or error_type == "bad_data":
        return ToolFailure("METRICS_BAD_QUERY", f"Prometheus rejected the query: {message}")
    if status == 422 or error_type == "execution":
        return ToolFailure("METRICS_QUERY_FAILED", f"Prometheus could not evaluate the query: {message}")
    return ToolFailure("METRICS_UNAVAILABLE",
                       f"Prometheus answered HTTP {status} ({error_type or 'error'}: {message}); not evidence.")


def _parse_answer(status: int, body: bytes, clean: Any) -> tuple[list[Series], int, list[str]]:
    """The series of a query or query_range answer (matrix, vector or scalar), native histograms skipped."""
    answer = _decoded(body)
    warnings = _annotations(answer, "warnings", clean) + _annotations(answer, "infos", clean)
    data = _envelope(status, answer, clean)
    if not isinstance(data, dict) or data.get("resultType") not in ("matrix", "vector", "scalar", "string"):
        raise ToolFailure("METRICS_BAD_RESPONSE", "Prometheus' answer has no result of a known type; not evidence.")
    kind, result = data["resultType"], data.get("result")
    try:
        if kind in ("scalar", "string"):
            series = Series("scalar", {})
            series.add(float(result[0]), float(result[1]))  # type: ignore[index]
            return [series], 0, warnings
        if not isinstance(result, list):
            raise TypeError("result is not a list")
        return (*_series_of(result, kind), warnings)
    except (TypeError, ValueError, KeyError, IndexError) as exc:
        raise ToolFailure("METRICS_BAD_RESPONSE", "Prometheus' answer does not have the documented shape; "
                                                  "not evidence.") from exc


def _annotations(answer: Any, key: str, clean: Any, keep: int = 5) -> list[str]:
    """The answer's `warnings` (errors that did not stop the query: a partial answer) or `infos` (info-level
    annotations, e.g. "metric might not be a counter"): the first few, as Prometheus wrote them."""
    found = answer.get(key) if isinstance(answer, dict) else None
    return [clean(str(item)) for item in found[:keep]] if isinstance(found, list) else []


def _series_of(result: list[Any], kind: str) -> tuple[list[Series], int]:
    out: list[Series] = []
    skipped = 0
    for entry in result:
        labels = {str(k): str(v) for k, v in entry["metric"].items()}
        name = labels.pop("__name__", "")
        series = Series(name, labels)
        floats, histograms = ("values", "histograms") if kind == "matrix" else ("value", "histogram")
        if histograms in entry and floats not in entry:
            skipped += 1  # a native histogram: no float values to show
            continue
        points = entry[floats] if kind == "matrix" else [entry[floats]]
        if points:
            stamps, values = zip(*points, strict=True)
            series.times.extend(map(float, stamps))
            series.values.extend(map(float, values))
        out.append(series)
        if len(out) > MAX_SERIES_READ:
            break
    return out, skipped
