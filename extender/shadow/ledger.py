"""Everything a shadow has concluded: counters, Prometheus metrics and the latest records.

The report (``to_json``) is what ``GET /report`` serves and ``--state-file`` holds; ``render``
turns it into the text ``gpu-extender shadow --report`` prints.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from prometheus_client import CollectorRegistry, Counter, generate_latest

from extender.shadow.record import Invariant, ShadowRecord

PREFIX = "gpu_extender_shadow"
REPORT_VERSION = 1


class ShadowLedger:
    def __init__(self, *, keep: int = 10_000, state_file: str | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self._lock = threading.Lock()
        self._records: deque[ShadowRecord] = deque(maxlen=keep)
        self._state_file = Path(state_file) if state_file else None
        self._started = clock()
        self._totals = {"judged": 0, "agree": 0, "differ": 0, "wouldWait": 0,
                        "withViolations": 0}
        self._violations = dict.fromkeys((i.value for i in Invariant), 0)
        self.synced = False
        self.registry = CollectorRegistry(auto_describe=True)
        self._pods = Counter(f"{PREFIX}_pods", "GPU pods bound by another scheduler, by what "
                             "gpu-extender would have done (agree: same node, differ: another "
                             "node, wait: no node).", ["outcome"], registry=self.registry)
        self._broken = Counter(f"{PREFIX}_violations", "Per-GPU invariants the real "
                               "placements broke, by invariant.", ["invariant"],
                               registry=self.registry)
        for outcome in ("agree", "differ", "wait"):
            self._pods.labels(outcome)
        for invariant in Invariant:
            self._broken.labels(invariant.value)

    def add(self, record: ShadowRecord) -> None:
        outcome = "agree" if record.agrees else "wait" if not record.would.node else "differ"
        with self._lock:
            self._records.append(record)
            self._totals["judged"] += 1
            self._totals[{"wait": "wouldWait"}.get(outcome, outcome)] += 1
            self._totals["withViolations"] += bool(record.violations)
            for violation in record.violations:
                self._violations[violation.invariant.value] += 1
        self._pods.labels(outcome).inc()
        for violation in record.violations:
            self._broken.labels(violation.invariant.value).inc()
        self.save()

    def to_json(self) -> dict[str, Any]:
        with self._lock:
            return {"version": REPORT_VERSION, "startedAt": round(self._started, 3),
                    "synced": self.synced, "totals": dict(self._totals),
                    "violations": dict(self._violations),
                    "records": [r.to_json() for r in self._records]}

    def exposition(self) -> bytes:
        return generate_latest(self.registry)

    def save(self) -> None:
        """Write the report to the state file, atomically (a reader never sees half)."""
        if self._state_file is None:
            return
        temporary = self._state_file.with_name(self._state_file.name + ".tmp")
        temporary.write_bytes(orjson.dumps(self.to_json(), option=orjson.OPT_INDENT_2))
        os.replace(temporary, self._state_file)


def render(report: dict[str, Any], *, limit: int = 50) -> str:
    """The report as text, 100 columns at most: totals, violations, then the latest records."""
    totals = report.get("totals") or {}
    lines = [f"shadow report (synced: {'yes' if report.get('synced') else 'no'})",
             f"  GPU pods judged: {totals.get('judged', 0)}; gpu-extender would have placed "
             f"{totals.get('agree', 0)} on the same node, {totals.get('differ', 0)} elsewhere, "
             f"kept {totals.get('wouldWait', 0)} pending",
             f"  placements that broke an invariant: {totals.get('withViolations', 0)}"]
    for name, count in sorted((report.get("violations") or {}).items()):
        if count:
            lines.append(f"    {name:<22} {count}")
    records = list(report.get("records") or [])
    if records:
        lines.append("")
        lines.append(f"{'POD':<28} {'ACTUAL':<22} {'GPU-EXTENDER':<26} VIOLATIONS")
    for record in records[-limit:]:
        actual = f"{record['node']}{_gpus(record['gpus'])}"
        would = record["would"]
        alt = f"{would['node']}{_gpus(would['gpus'])}" if would["node"] else "wait"
        broken = ",".join(v["invariant"] for v in record["violations"]) or "-"
        lines.append(f"{_cut(record['pod'], 28):<28} {_cut(actual, 22):<22} "
                     f"{_cut(alt, 26):<26} {_cut(broken, 20)}")
    details = [(r["pod"], v["detail"]) for r in records[-limit:] for v in r["violations"]]
    details += [(r["pod"], "would wait: " + str(r["would"]["reason"]))
                for r in records[-limit:] if not r["would"]["node"] and r["would"]["reason"]]
    if details:
        lines.append("")
        for pod, detail in details:
            lines.append(_cut(f"  {pod}: {detail}", 100))
    return "\n".join(lines)


def _gpus(gpus: list[int]) -> str:
    return f" gpu {','.join(map(str, gpus))}" if gpus else ""


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
