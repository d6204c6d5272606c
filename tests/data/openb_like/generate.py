"""Writes the openb-like fixture next to this file (seeded: the same bytes on any machine).

    .venv/bin/python tests/data/openb_like/generate.py          # rewrites nodes.csv, pods.csv
    .venv/bin/python tests/data/openb_like/generate.py --check  # exit 1 if they differ

The trace comes from ``extender.simulator.synthetic`` (node templates and pod classes measured
on the openb default trace; see its docstring), at 200 GPU nodes, with 5 GiB of memory per
requested vCPU: like openb's GPU pods (about 40 GiB per GPU on G2 nodes that hold 48 GiB per
GPU), memory then strands GPUs, which is what separates the default strategy from FGD. The
files use the openb CSV columns, so ``gpu-extender simulate --nodes ... --pods ...`` reads
them like the real trace. Nothing here is copied from the trace files.
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from extender.simulator.synthetic import synthetic_trace  # noqa: E402

SEED = 7
NODES = 200
MEMORY_PER_CORE = 5_120


def render() -> dict[str, str]:
    trace = synthetic_trace(SEED, nodes=NODES, memory_per_core=MEMORY_PER_CORE)
    nodes = io.StringIO()
    writer = csv.writer(nodes, lineterminator="\n")
    writer.writerow(["sn", "cpu_milli", "memory_mib", "gpu", "model"])
    for n in trace.nodes:
        writer.writerow([n.name, n.cpu_milli, n.memory_mib, n.gpus, n.model])
    pods = io.StringIO()
    writer = csv.writer(pods, lineterminator="\n")
    writer.writerow(["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec"])
    for p in trace.pods:
        writer.writerow([p.name, p.cpu_milli, p.memory_mib, p.num_gpu, p.gpu_milli,
                         "|".join(p.gpu_spec)])
    return {"nodes.csv": nodes.getvalue(), "pods.csv": pods.getvalue()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args()
    stale = []
    for name, text in render().items():
        path = HERE / name
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            path.write_text(text, encoding="utf-8")
    if stale:
        print(f"stale: {', '.join(stale)}; rerun {Path(__file__).name}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
