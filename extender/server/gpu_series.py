"""The per-GPU series of ``/metrics``, rendered row by row and kept across scrapes.

One series per GPU and quantity is what dcgm-exporter users expect (the same label names), but
built as ``prometheus_client`` metric families at every scrape it cost ~0.5-0.9 s of CPU at
1,000 nodes and ~10 s at 10,000 (400,000 samples, 35 MB of text), all of it holding the GIL
that filter and bind need, and past Prometheus' default 10 s scrape timeout. Here each node's
lines are rendered once and kept with the ``node_version`` they were rendered at; a scrape
re-renders only the rows that changed since the last one (a placement changes one row) and
joins the kept bytes. The text is what ``prometheus_client.generate_latest`` writes for the
same families (labels sorted by name, its float format), which
``tests/server/test_gpu_series.py`` checks against the families built the old way.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
from prometheus_client.utils import floatToGoString

from extender.inventory.snapshot import ClusterSnapshot

MIB = 1024 * 1024


@dataclass(frozen=True)
class Family:
    name: str
    help: str


PREFIX = "gpu_extender"
MEMORY = Family(f"{PREFIX}_gpu_memory_bytes", "Memory of one GPU.")
MEMORY_FREE = Family(f"{PREFIX}_gpu_memory_free_bytes", "Memory of one GPU no pod holds.")
PODS = Family(f"{PREFIX}_gpu_pods", "Pods holding part of one GPU.")
HEALTHY = Family(f"{PREFIX}_gpu_healthy", "1 when the GPU is healthy (node agent), else 0.")
MIG = Family(f"{PREFIX}_gpu_mig_enabled", "1 when the GPU is MIG-partitioned.")
MIG_USED = Family(f"{PREFIX}_gpu_mig_slots_used",
                  "MIG slots (of 8 addressable) in use or not available on a MIG-partitioned "
                  "GPU.")
REPLICAS = Family(f"{PREFIX}_gpu_replicas", "Time-slice replicas a time-sliced GPU advertises.")
REPLICAS_FREE = Family(f"{PREFIX}_gpu_replicas_free",
                       "Time-slice replicas of a GPU no pod holds.")
FAMILIES = (MEMORY, MEMORY_FREE, PODS, HEALTHY, MIG, MIG_USED, REPLICAS, REPLICAS_FREE)
"""In exposition order. MIG and replica series only for the GPUs that are partitioned or
time-sliced."""
GPU_LABELS = ("Hostname", "gpu", "UUID", "modelName")
"""dcgm-exporter's label names (written sorted by name, as ``prometheus_client`` does)."""

_HEADERS = tuple(f"# HELP {f.name} {f.help}\n# TYPE {f.name} gauge\n".encode()
                 for f in FAMILIES)
_NOTHING = tuple(b"" for _ in FAMILIES)


class GpuSeries:
    """The eight per-GPU families of one inventory's snapshots; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._names: tuple[str, ...] = ()
        self._version = np.zeros(0, dtype=np.int64)
        self._rows: list[tuple[bytes, ...]] = []
        """Per row, its lines of each family (``b""`` where it has none)."""
        self.rows_rendered = 0
        """Rows rendered since the start (a scrape after one placement renders one)."""

    def exposition(self, snapshot: ClusterSnapshot) -> bytes:
        """The families' text for ``snapshot`` (rows unchanged since the last call are kept)."""
        with self._lock:
            self._refresh(snapshot)
            out: list[bytes] = []
            for f, header in enumerate(_HEADERS):
                out.append(header)
                out.extend(row[f] for row in self._rows)
            return b"".join(out)

    def _refresh(self, snapshot: ClusterSnapshot) -> None:
        n, version = snapshot.n_nodes, snapshot.node_version
        names = snapshot.node_names
        if len(self._rows) != n or (self._names is not names and self._names != names):
            # nodes came or went: rows may hold other nodes, render every one (a node gone
            # and back in its row makes a new, equal name tuple: its row's version says so)
            self._rows = [_NOTHING] * n
            stale = np.arange(n)
        else:
            stale = np.flatnonzero(self._version != version)
        for row in stale.tolist():
            self._rows[row] = _render_row(snapshot, row)
        self.rows_rendered += len(stale)
        self._names = names
        self._version = version.copy()


def _render_row(snapshot: ClusterSnapshot, row: int) -> tuple[bytes, ...]:
    if not snapshot.node_valid[row]:
        return _NOTHING
    slots = np.flatnonzero(snapshot.present[row])
    if not len(slots):
        return _NOTHING
    name = snapshot.node_names[row]
    info = snapshot.nodes.get(name)
    uuids: dict[int, str] = {}
    for device in info.gpus if info else ():
        uuids.setdefault(device.index, device.uuid or "")  # the first of an index, as ever
    catalog = snapshot.catalog
    host = _escape(name)
    lines: list[list[str]] = [[] for _ in FAMILIES]
    used_slots = np.unpackbits(snapshot.mig_used[row, slots][:, None], axis=1).sum(axis=1)
    for i, slot in enumerate(slots.tolist()):
        index = int(snapshot.gpu_index[row, slot])
        labels = (f'{{Hostname="{host}",UUID="{_escape(uuids.get(index, ""))}",gpu="{index}",'
                  f'modelName="{_escape(catalog.id_of(int(snapshot.gpu_type[row, slot])))}"}} ')
        partitioned = int(snapshot.mig_layout[row, slot]) >= 0
        values: list[tuple[int, float]] = [
            (0, float(snapshot.total_mib[row, slot]) * MIB),
            (1, float(max(int(snapshot.free_mib[row, slot]), 0)) * MIB),
            (2, float(snapshot.pods[row, slot])),
            (3, 1.0 if snapshot.healthy[row, slot] else 0.0),
            (4, 1.0 if partitioned else 0.0)]
        if partitioned:
            values.append((5, float(used_slots[i])))
        if int(snapshot.replicas[row, slot]) > 1:
            values += [(6, float(snapshot.replicas[row, slot])),
                       (7, float(snapshot.replicas_free[row, slot]))]
        for f, value in values:
            lines[f].append(f"{FAMILIES[f].name}{labels}{_number(value)}\n")
    return tuple("".join(family).encode() for family in lines)


def _number(value: float) -> str:
    """``prometheus_client``'s own float format (Go's: ``1.6106127360e+10``, ``1.0``)."""
    return str(floatToGoString(value))  # type: ignore[no-untyped-call]


def _escape(value: str) -> str:
    """A label value as the text format writes it."""
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
