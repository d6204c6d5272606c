"""The issue-27 report in one command: the default against FGD on every openb trace, resumable.

Usage (from the repository root; under ``nice``, it is hours of CPU)::

    nice -n 19 .venv/bin/python benchmarks/placement_sweep.py --out-dir /tmp/sweep \
        --seeds 42-51 --jobs 2 [--import /tmp/older-sweep:fgd] [--bounds-from /tmp/older-sweep]
    .venv/bin/python benchmarks/placement_sweep.py --out-dir /tmp/sweep --report-only

It runs the replays of ``benchmarks/placement.py`` (same ``results.csv`` / ``curves.jsonl``,
one row appended per finished replay, so an interrupted sweep resumes where it stopped), but
**seed by seed**: every trace and policy of seed 42, then of 43, ... so that a sweep cut short
has whole seeds on every trace. ``--import DIR[:policy,policy]`` first copies the rows (and
curves) of an earlier results folder that this one lacks (e.g. FGD's, whose code did not
change); ``--bounds-from DIR`` copies its ``bounds.csv`` (``benchmarks/placement_bounds.py``)
when this folder has none. Then it writes

- ``sweep.md``: per trace, FGD's and the default's median unallocated GPU % at 100 % arrived
  with the spread over seeds, the seeds run, the median of the per-seed ratios, seeds won,
  the occupied-node bill at 25 / 50 / 75 % over FGD's (median of per-seed ratios), the LP and
  IP limits and the gap to the IP limit; above it, how many traces meet each target;
- ``ratio.png``: the ratio to FGD per trace (min-max bar) with the limits over FGD as lines;
- ``table.md`` / ``allocation.png`` as ``placement.py --report-only`` does.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.placement import (  # noqa: E402
    RESULT_FIELDS,
    append_row,
    done_keys,
    parse_seeds,
    run_all,
    tasks,
)
from benchmarks.placement_report import (  # noqa: E402
    load_bounds,
    load_rows,
    sweep_table,
    write_reports,
)

POLICIES = ("fgd", "cost-fragmentation")


def import_results(source: Path, out_dir: Path, policies: set[str] | None) -> int:
    """Copy the rows and curves of ``source`` that ``out_dir`` lacks (only ``policies`` if
    given); returns the rows copied."""
    have = done_keys(out_dir / "results.csv")
    copied: set[tuple[str, str, str, str, str]] = set()
    for row in load_rows(source / "results.csv"):
        key = (row["trace"], row["policy"], row["seed"], row["inflate"], row["tie_break"])
        if key in have or key in copied or (policies and row["policy"] not in policies):
            continue
        append_row(out_dir / "results.csv", RESULT_FIELDS, {f: row.get(f, "")
                                                            for f in RESULT_FIELDS})
        copied.add(key)
    curves = source / "curves.jsonl"
    if copied and curves.exists():
        taken: set[tuple[str, str, str, str, str]] = set()
        with curves.open() as src, (out_dir / "curves.jsonl").open("a") as dst:
            for line in src:
                record = json.loads(line)
                key = (record["trace"], record["policy"], str(record["seed"]),
                       f"{record['inflate']:g}", record["tie_break"])
                if key in copied and key not in taken:
                    taken.add(key)
                    dst.write(json.dumps(record) + "\n")
    return len(copied)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("--trace-dir", default=str(ROOT.parent / "shared/data/openb"))
    parser.add_argument("--traces", default="all")
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--seeds", default="42-51")
    parser.add_argument("--inflate", type=float, default=1.3)
    parser.add_argument("--tie-break", default="order", choices=("order", "random"))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--import", dest="imports", action="append", default=[],
                        metavar="DIR[:POLICIES]", help="copy rows this folder lacks from DIR")
    parser.add_argument("--bounds-from", help="copy DIR/bounds.csv if this folder has none")
    parser.add_argument("--expected", default=str(ROOT.parent / "shared/data/fgd_expected_results"))
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args(argv)
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for spec in args.imports:
        folder, _, names = spec.partition(":")
        wanted = {p.strip() for p in names.split(",") if p.strip()} or None
        print(f"imported {import_results(Path(folder), out_dir, wanted)} rows from {folder}")
    if args.bounds_from and not (out_dir / "bounds.csv").exists():
        shutil.copy(Path(args.bounds_from) / "bounds.csv", out_dir / "bounds.csv")
    if not args.report_only:
        args.fleet = None
        policies = [p.strip() for p in args.policies.split(",") if p.strip()]
        done = done_keys(out_dir / "results.csv")
        pending = sorted((t for t in tasks(args, policies, parse_seeds(args.seeds))
                          if t.key not in done), key=lambda t: (t.seed, t.trace, t.policy))
        print(f"{len(pending)} replays to run ({len(done)} already recorded), seed by seed, "
              f"with {args.jobs} processes", flush=True)
        run_all(pending, out_dir, args.jobs)
    rows = load_rows(out_dir / "results.csv")
    (out_dir / "sweep.md").write_text("\n".join(sweep_table(rows, load_bounds(
        out_dir / "bounds.csv"))) + "\n")
    for path in [out_dir / "sweep.md", *write_reports(out_dir, Path(args.expected))]:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
