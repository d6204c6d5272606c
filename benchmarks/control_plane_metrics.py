"""Where a Binding's time goes on the control plane side, for ``bench_scheduler.py``: the API
server's own latency for ``POST pods/binding`` and its etcd write, etcd's WAL fsync and backend
commit, as deltas of their Prometheus histograms over the burst (issue 22e: the bind p50
decomposed).

    before = ControlPlaneMetrics.scrape(cluster)   # before the burst
    ...
    print(ControlPlaneMetrics.scrape(cluster).since(before).line())

``scheduler_line(port)`` reads kube-scheduler's own histograms the same way (from its start,
which is the burst's).

Histograms are read from the text exposition (``_bucket``/``_sum``/``_count``), summed over
the label sets that match; p50 is interpolated within its bucket (Prometheus'
``histogram_quantile``).
"""

from __future__ import annotations

import re
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localcluster.network import tls_context

SERIES = {
    "apiserver binding": ("apiserver_request_duration_seconds",
                          ('verb="POST"', 'resource="pods"', 'subresource="binding"')),
    "apiserver etcd pod update": ("etcd_request_duration_seconds",
                                  ('operation="update"', 'resource="pods"')),
    "etcd wal fsync": ("etcd_disk_wal_fsync_duration_seconds", ()),
    "etcd backend commit": ("etcd_disk_backend_commit_duration_seconds", ()),
}
"""Label fragments each series must carry. etcd runs with ``--unsafe-no-fsync`` here
(``localcluster``), so its WAL fsync is nearly free by construction."""

CENSUS = {
    "apiserver_request_total": ("request", ("verb", "resource", "subresource")),
    "apiserver_watch_events_total": ("watch events", ("resource", "kind")),
}
"""Counters counted per pod over the burst (``census_line``): what the API server was asked,
by verb and resource, and the watch events it sent, by resource: the work a mode makes the
control plane do, beside the CPU it took."""
_LABEL = re.compile(r'(\w+)="([^"]*)"')

_LINE = re.compile(r"^(?P<name>[a-zA-Z_:][\w:]*)(?:\{(?P<labels>[^}]*)\})? (?P<value>\S+)$")
_LE = re.compile(r'(?:^|,)le="([^"]+)"')  # not the end of another name (profile=)


@dataclass(frozen=True)
class Histogram:
    buckets: tuple[tuple[float, float], ...]
    """(upper bound, cumulative count), sorted."""
    total: float
    count: float

    def minus(self, other: Histogram) -> Histogram:
        before = dict(other.buckets)
        return Histogram(tuple((le, n - before.get(le, 0.0)) for le, n in self.buckets),
                         self.total - other.total, self.count - other.count)

    def quantile_ms(self, q: float) -> float | None:
        if self.count <= 0:
            return None
        rank, lower, below = q * self.count, 0.0, 0.0
        for le, cumulative in self.buckets:
            if cumulative >= rank:
                if le == float("inf"):
                    return lower * 1000
                inside = cumulative - below
                return 1000 * (lower + (le - lower) * ((rank - below) / inside if inside else 0))
            lower, below = le, cumulative
        return None

    def mean_ms(self) -> float | None:
        return 1000 * self.total / self.count if self.count > 0 else None


def parse(text: str, name: str, labels: tuple[str, ...]) -> Histogram:
    buckets: dict[float, float] = {}
    total = count = 0.0
    for line in text.splitlines():
        match = _LINE.match(line)
        if match is None or not match["name"].startswith(name):
            continue
        found = match["labels"] or ""
        if not all(label in found for label in labels):
            continue
        value, suffix = float(match["value"]), match["name"][len(name):]
        if suffix == "_bucket":
            le = _LE.search(found)
            if le is not None:
                bound = float(le.group(1))
                buckets[bound] = buckets.get(bound, 0.0) + value
        elif suffix == "_sum":
            total += value
        elif suffix == "_count":
            count += value
    return Histogram(tuple(sorted(buckets.items())), total, count)


def census(text: str) -> dict[str, float]:
    """The ``CENSUS`` counters of one exposition, summed over the labels not named."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        match = _LINE.match(line)
        if match is None or match["name"] not in CENSUS:
            continue
        labels = dict(_LABEL.findall(match["labels"] or ""))
        prefix, named = CENSUS[match["name"]]
        key = " ".join([prefix, *(labels[k] for k in named if labels.get(k))])
        out[key] = out.get(key, 0.0) + float(match["value"])
    return out


@dataclass(frozen=True)
class ControlPlaneMetrics:
    histograms: dict[str, Histogram]
    counts: dict[str, float]
    """``census``: the API server's requests and watch events (cumulative, or a delta)."""

    @classmethod
    def scrape(cls, cluster: Any) -> ControlPlaneMetrics | None:
        """The API server's and etcd's histograms now; ``None`` if either cannot be read."""
        try:
            answer = cluster.api_client().call_api("/metrics", "GET", _preload_content=False,
                                                   auth_settings=["BearerToken"])
            response = answer[0] if isinstance(answer, tuple) else answer
            apiserver = response.data.decode()
            url = _etcd_url(Path(cluster.workdir))
            with urllib.request.urlopen(f"{url}/metrics", timeout=30) as reply:
                etcd = reply.read().decode()
        except Exception:  # a benchmark's extra line: never fail the run for it
            return None
        texts = {"apiserver": apiserver, "etcd": etcd}
        return cls({key: parse(texts[key.split()[0]], name, labels)
                    for key, (name, labels) in SERIES.items()}, census(apiserver))

    def since(self, before: ControlPlaneMetrics | None) -> ControlPlaneMetrics:
        if before is None:
            return self
        return ControlPlaneMetrics({key: h.minus(before.histograms[key])
                                    for key, h in self.histograms.items()},
                                   {key: n - before.counts.get(key, 0.0)
                                    for key, n in self.counts.items()})

    def census_line(self, pods: int, *, at_least: float = 0.05) -> str:
        """Requests and watch events per pod, the largest first (those under ``at_least``
        per pod left out)."""
        if pods <= 0:
            return "apiserver per pod: (no pods)"
        per_pod = sorted(((n / pods, key) for key, n in self.counts.items()
                          if n / pods >= at_least), reverse=True)
        return "apiserver per pod: " + (", ".join(f"{key} {n:.2f}" for n, key in per_pod)
                                        or "(nothing counted)")

    def line(self) -> str:
        parts = []
        for key, histogram in self.histograms.items():
            p50, mean = histogram.quantile_ms(0.5), histogram.mean_ms()
            if p50 is None or mean is None:
                continue
            parts.append(f"{key} p50 {p50:.2f} mean {mean:.2f} (n {histogram.count:.0f})")
        return "control plane ms: " + ("; ".join(parts) if parts else "(no metrics)")


SCHEDULER_SERIES = {
    "scheduling attempt": ("scheduler_scheduling_attempt_duration_seconds",
                           ('result="scheduled"',)),
    "of it the algorithm": ("scheduler_scheduling_algorithm_duration_seconds", ()),
}
"""kube-scheduler's own time per pod it scheduled: the attempt (which includes the
asynchronous binding, so mostly the bind's wait) and the algorithm in it (its filters, the
extenders' filters, scoring: the part of the cycle that waits for the extender's filter)."""


def scheduler_line(port: int) -> str:
    """kube-scheduler's ``SCHEDULER_SERIES`` since it started (it is started for the burst):
    p50 and mean in ms; read from its ``/metrics``, which the benchmark's cluster serves
    without authentication."""
    try:
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/metrics", timeout=30,
                                    context=tls_context(None)) as reply:
            text = reply.read().decode()
    except Exception:  # a benchmark's extra line: never fail the run for it
        return "kube-scheduler ms: (no metrics)"
    parts = []
    for key, (name, labels) in SCHEDULER_SERIES.items():
        histogram = parse(text, name, labels)
        p50, mean = histogram.quantile_ms(0.5), histogram.mean_ms()
        if p50 is not None and mean is not None:
            parts.append(f"{key} p50 {p50:.2f} mean {mean:.2f} (n {histogram.count:.0f})")
    return "kube-scheduler ms: " + ("; ".join(parts) if parts else "(no metrics)")


def _etcd_url(workdir: Path) -> str:
    """The client URL of the cluster's etcd (its data under ``workdir``; other sessions run
    theirs on the same machine), from its command line (``localcluster`` keeps the port to
    itself)."""
    data_dir = f"--data-dir={workdir / 'etcd-data'}".encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"etcd") and data_dir in argv:
            for arg in argv:
                if arg.startswith(b"--listen-client-urls="):
                    return arg.split(b"=", 1)[1].decode()
    raise LookupError(f"no etcd with {data_dir!r} running")
