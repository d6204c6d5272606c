"""openb-format trace files -> typed rows (``cluster-trace-gpu-v2023``).

Details:

- node list: ``sn,cpu_milli,memory_mib,gpu,model`` (``model`` blank on CPU-only nodes);
- pod list: ``name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,...]``; the ``multigpu*``
  files stop after ``gpu_milli``. ``gpu_spec`` is ``|``-joined model names (blank: any model).
  Timestamps, ``qos`` and ``pod_phase`` are ignored, as the FGD simulator ignores them.

Invariants checked (each violation is a ``TraceError`` naming file, line, column and value):
counts and sizes are non-negative integers; ``gpu_milli`` is 0..1000; a GPU pod asks for a
positive share, a CPU-only pod for none; only single-GPU pods share a GPU (``gpu_milli < 1000``
needs ``num_gpu == 1``, as in the trace and the simulator, which refuses the rest).
"""

from __future__ import annotations

import csv
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from extender.simulator.errors import TraceError
from extender.units import MILLI

NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")


@dataclass(frozen=True)
class TraceNode:
    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    model: str
    """Trace model name (``T4``, ``G2``...); empty on a CPU-only node."""


@dataclass(frozen=True)
class TracePod:
    name: str
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    """Thousandths of each GPU (1000: whole GPUs; 0: CPU-only)."""
    gpu_spec: tuple[str, ...] = ()
    """Accepted models (empty: any)."""

    @property
    def total_milli(self) -> int:
        """GPU demand in thousandths of a GPU (FGD's ``TotalMilliGpu``)."""
        return self.num_gpu * self.gpu_milli


@dataclass(frozen=True)
class Trace:
    """A cluster (nodes) and a workload (pods), as read or generated."""

    name: str
    nodes: tuple[TraceNode, ...]
    pods: tuple[TracePod, ...]

    @property
    def demand_milli(self) -> int:
        return sum(p.total_milli for p in self.pods)


def _rows(path: Path, required: Sequence[str]) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, row) for each data row; checks the header names ``required``."""
    source = str(path)
    try:
        handle = path.open(newline="", encoding="utf-8")
    except OSError as exc:
        raise TraceError(source, f"cannot read: {exc.strerror}") from exc
    with handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames
        if header is None:
            raise TraceError(source, "file is empty; expected a CSV header with columns "
                                     + ",".join(required))
        missing = [c for c in required if c not in header]
        if missing:
            raise TraceError(source, f"missing column(s) {', '.join(missing)}; header is "
                                     f"{','.join(header)!r}, expected at least "
                                     f"{','.join(required)}", line=1)
        try:
            for row in reader:
                yield reader.line_num, row
        except (csv.Error, UnicodeDecodeError) as exc:
            raise TraceError(source, f"not a valid CSV file: {exc}",
                             line=reader.line_num) from exc


def _integer(source: str, line: int, row: dict[str, str], column: str, *, minimum: int = 0,
             maximum: int | None = None) -> int:
    raw = (row.get(column) or "").strip()
    try:
        value = int(raw)
    except ValueError:
        try:
            as_float = float(raw)
        except ValueError:
            as_float = float("nan")
        if as_float.is_integer():
            value = int(as_float)
        else:
            raise TraceError(source, "must be an integer", line=line, column=column,
                             value=raw) from None
    if value < minimum or (maximum is not None and value > maximum):
        span = f"{minimum}..{maximum}" if maximum is not None else f">= {minimum}"
        raise TraceError(source, f"must be {span}", line=line, column=column, value=raw)
    return value


def load_nodes(path: str | Path) -> tuple[TraceNode, ...]:
    """Read an openb node list; raises ``TraceError``."""
    path = Path(path)
    source = str(path)
    nodes: list[TraceNode] = []
    seen: set[str] = set()
    for line, row in _rows(path, NODE_COLUMNS):
        name = (row.get("sn") or "").strip()
        if not name:
            raise TraceError(source, "node name is empty", line=line, column="sn", value="")
        if name in seen:
            raise TraceError(source, "duplicate node name", line=line, column="sn", value=name)
        seen.add(name)
        gpus = _integer(source, line, row, "gpu", maximum=16)
        model = (row.get("model") or "").strip()
        if gpus > 0 and not model:
            raise TraceError(source, "a node with GPUs needs a model name", line=line,
                             column="model", value="")
        nodes.append(TraceNode(name=name,
                               cpu_milli=_integer(source, line, row, "cpu_milli"),
                               memory_mib=_integer(source, line, row, "memory_mib"),
                               gpus=gpus, model=model if gpus > 0 else ""))
    if not nodes:
        raise TraceError(source, "no nodes in the file")
    return tuple(nodes)


def load_pods(path: str | Path) -> tuple[TracePod, ...]:
    """Read an openb pod list; raises ``TraceError``."""
    path = Path(path)
    source = str(path)
    pods: list[TracePod] = []
    for line, row in _rows(path, POD_COLUMNS):
        name = (row.get("name") or "").strip() or f"pod-line-{line}"
        num_gpu = _integer(source, line, row, "num_gpu", maximum=16)
        milli = _integer(source, line, row, "gpu_milli", maximum=MILLI)
        if num_gpu == 0 and milli != 0:
            raise TraceError(source, "a CPU-only pod (num_gpu 0) must have gpu_milli 0",
                             line=line, column="gpu_milli", value=row.get("gpu_milli"))
        if num_gpu > 0 and milli == 0:
            raise TraceError(source, "a GPU pod needs gpu_milli 1..1000", line=line,
                             column="gpu_milli", value=row.get("gpu_milli"))
        if num_gpu > 1 and milli != MILLI:
            raise TraceError(source, "only single-GPU pods may share a GPU (num_gpu > 1 needs "
                                     "gpu_milli 1000)", line=line, column="gpu_milli",
                             value=row.get("gpu_milli"))
        spec = tuple(s.strip() for s in (row.get("gpu_spec") or "").split("|") if s.strip())
        pods.append(TracePod(name=name,
                             cpu_milli=_integer(source, line, row, "cpu_milli"),
                             memory_mib=_integer(source, line, row, "memory_mib"),
                             num_gpu=num_gpu, gpu_milli=milli,
                             gpu_spec=tuple(dict.fromkeys(spec))))
    if not pods:
        raise TraceError(source, "no pods in the file")
    return tuple(pods)


def load_trace(nodes: str | Path, pods: str | Path) -> Trace:
    """Both lists; the trace is named after the pod file (``openb_pod_list_default``)."""
    return Trace(name=Path(pods).stem, nodes=load_nodes(nodes), pods=load_pods(pods))
