"""The embedded metrics store: every `*.om` / `*.prom` file under a folder, parsed by prometheus_client's parsers.

`*.om` is OpenMetrics (timestamps in seconds, `# EOF`), `*.prom` the Prometheus text format (timestamps in ms); both
must give every sample a timestamp (a sample without one is skipped and counted). `# TYPE` and `# UNIT` are kept per
metric name. A file that does not parse is skipped whole and named in the notes (the parsers stop at the first
bad line; the same file would also fail `promtool tsdb create-blocks-from openmetrics`).

Files are parsed once and kept while their (size, mtime) is unchanged; the folder is bounded in bytes and samples,
so a huge folder is an ERROR, not an out-of-memory.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client.metrics_core import Metric
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families as parse_prometheus_text

from core.errors import ToolFailure
from core.tools.metrics.series import Series
from core.tools.walk import KeptListing

SUFFIXES = (".om", ".prom")
MAX_FOLDER_BYTES = 128 * 1024 * 1024
MAX_SAMPLES = 2_000_000
"""prometheus_client's parsers read about 45,000 samples a second here (bench/bench_metrics.py): the bound keeps the
first read of a folder under a minute (it is kept afterwards); larger data belongs in Prometheus."""
_SAMPLE_SUFFIXES = ("_total", "_created", "_count", "_sum", "_bucket", "_gcount", "_gsum", "_info")


@dataclass(frozen=True)
class MetricMeta:
    """What the exposition says of one metric family: its type, unit and help text."""

    type: str = ""
    unit: str = ""
    help: str = ""


@dataclass
class Loaded:
    """One parsed file: its series by (name, sorted labels), the families' metadata, what was skipped."""

    series: dict[tuple[str, tuple[tuple[str, str], ...]], Series] = field(default_factory=dict)
    meta: dict[str, MetricMeta] = field(default_factory=dict)
    samples: int = 0
    untimed: int = 0


@dataclass
class Snapshot:
    """The whole folder as one queryable set (files merged; a series in two files gets both files' points)."""

    series: list[Series]
    meta: dict[str, MetricMeta]
    files: int
    samples: int
    untimed: int
    unreadable: list[str]


def _families(path: Path, text: str) -> Iterable[Metric]:
    if path.suffix == ".om":
        families: Iterable[Metric] = parse_openmetrics(text)  # type: ignore[no-untyped-call]
        return families
    return parse_prometheus_text(text)


def load_file(path: Path) -> Loaded:
    """Parse one file; ValueError when it is not valid exposition text."""
    text = path.read_text(encoding="utf-8")
    loaded = Loaded()
    for family in _families(path, text):
        if family.type != "unknown" or family.name not in loaded.meta:
            loaded.meta[family.name] = MetricMeta(family.type, family.unit, family.documentation)
        for sample in family.samples:
            if sample.timestamp is None:
                loaded.untimed += 1
                continue
            if sample.name.endswith("_created"):
                continue  # creation times are not values of the metric
            key = (sample.name, tuple(sorted(sample.labels.items())))
            series = loaded.series.get(key)
            if series is None:
                series = loaded.series[key] = Series(sample.name, dict(sample.labels))
            series.add(float(sample.timestamp), float(sample.value))
            loaded.samples += 1
    return loaded


def family_name(sample_name: str, meta: dict[str, MetricMeta]) -> str:
    """The family a sample name belongs to (`x_total` -> `x` when `x` is a known family)."""
    if sample_name in meta:
        return sample_name
    for suffix in _SAMPLE_SUFFIXES:
        if sample_name.endswith(suffix) and sample_name[: -len(suffix)] in meta:
            return sample_name[: -len(suffix)]
    return sample_name


class MetricsFolder:
    """The parsed folder, re-read only for files whose size or mtime changed (thread-safe: tools run in threads)."""

    def __init__(self, root: Path, max_bytes: int = MAX_FOLDER_BYTES, max_samples: int = MAX_SAMPLES) -> None:
        self.root = Path(root)
        self._max_bytes = max_bytes
        self._max_samples = max_samples
        self._files: dict[Path, tuple[tuple[int, int], Loaded | None]] = {}
        self._snapshot: tuple[tuple[tuple[Path, int, int], ...], Snapshot] | None = None
        self._lock = threading.Lock()
        self._folder = KeptListing(self.root)

    def snapshot(self) -> Snapshot:
        """The folder's series now (a cached snapshot while no file changed)."""
        if not self.root.exists():
            raise ToolFailure("METRICS_PATH_MISSING", f"The metrics folder '{self.root.name}' does not exist on the server.")
        with self._lock:
            listing = self._listing()
            if self._snapshot is not None and self._snapshot[0] == listing:
                return self._snapshot[1]
            snapshot = self._load(listing)
            self._snapshot = (listing, snapshot)
            return snapshot

    def _listing(self) -> tuple[tuple[Path, int, int], ...]:
        out = []
        total = 0
        for path, stat in self._folder.files(lambda p: p.suffix in SUFFIXES):
            total += stat.st_size
            if total > self._max_bytes:
                raise ToolFailure("METRICS_PATH_TOO_LARGE",
                                  f"The metrics folder holds more than {self._max_bytes // 2**20} MiB of exposition "
                                  "text; load it into Prometheus and set DIAG_PROMETHEUS_URL.")
            out.append((path, stat.st_size, stat.st_mtime_ns))
        return tuple(out)

    def _load(self, listing: tuple[tuple[Path, int, int], ...]) -> Snapshot:
        merged: dict[tuple[str, tuple[tuple[str, str], ...]], Series] = {}
        meta: dict[str, MetricMeta] = {}
        samples = untimed = 0
        unreadable: list[str] = []
        for path, size, mtime in listing:
            loaded = self._file(path, (size, mtime))
            if loaded is None:
                unreadable.append(path.relative_to(self.root).as_posix() if path != self.root else path.name)
                continue
            samples += loaded.samples
            untimed += loaded.untimed
            if samples > self._max_samples:
                raise ToolFailure("METRICS_PATH_TOO_LARGE",
                                  f"The metrics folder holds more than {self._max_samples:,} samples; load it into "
                                  "Prometheus and set DIAG_PROMETHEUS_URL.")
            for name, value in loaded.meta.items():
                meta.setdefault(name, value)
            for key, series in loaded.series.items():
                into = merged.get(key)
                merged[key] = series if into is None else _merge(into, series)
        self._files = {p: v for p, v in self._files.items() if any(p == f[0] for f in listing)}
        return Snapshot(list(merged.values()), meta, len(listing) - len(unreadable), samples, untimed, unreadable)

    def _file(self, path: Path, signature: tuple[int, int]) -> Loaded | None:
        cached = self._files.get(path)
        if cached is not None and cached[0] == signature:
            return cached[1]
        try:
            loaded: Loaded | None = load_file(path)
        except Exception:  # a bad file is skipped whatever the parser raises: besides ValueError,
            # prometheus_client raises AttributeError/TypeError on some malformed timestamps (found by fuzzing)
            loaded = None
        if loaded is not None:
            for series in loaded.series.values():
                _sort(series)
        self._files[path] = (signature, loaded)
        return loaded


def _sort(series: Series) -> None:
    times = series.times
    if all(times[i] <= times[i + 1] for i in range(len(times) - 1)):
        return
    order = sorted(range(len(times)), key=times.__getitem__)
    series.times = type(times)("d", (times[i] for i in order))
    series.values = type(series.values)("d", (series.values[i] for i in order))


def _merge(a: Series, b: Series) -> Series:
    out = Series(a.name, a.labels)
    for t, v in sorted([*zip(a.times, a.values, strict=True), *zip(b.times, b.values, strict=True)]):
        out.add(t, v)
    return out
