"""Summarise a py-spy ``--format raw --threads`` profile of the extender (bench_scheduler
``--profile``): where the worker's CPU samples go, by activity and by function.

    .venv/bin/python benchmarks/profile_summary.py /tmp/prof/extender-1000.txt [--top 25]

Each line of the file is one distinct stack (``thread (0x..);frame;frame ... count``),
outermost frame first. An *activity* is the first rule below that a frame of the stack
matches (a verb's handler, the watch, the event writer, gunicorn's HTTP plumbing); *self* is
the innermost frame.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

ACTIVITIES: tuple[tuple[str, str], ...] = (
    ("event writer", "extender/apiserver/events.py"),
    ("bind: explanation", "extender/scheduling/explain.py"),
    ("bind: API request", "extender/apiserver/"),
    ("bind", "extender/scheduling/bind.py"),
    ("prioritize", "extender/scheduling/prioritize.py"),
    ("filter", "extender/scheduling/filter.py"),
    ("watch: apply", "extender/sync/"),
    ("verbs: wire, answers", "extender/server/"),
    ("flask / werkzeug", "flask/"),
    ("gunicorn / HTTP", "gunicorn/"),
)

_FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")


def activity(frames: list[str]) -> str:
    for name, marker in ACTIVITIES:
        if any(marker in frame for frame in frames):
            return name
    return "other"


def short(frame: str) -> str:
    match = _FRAME.match(frame)
    if match is None:
        return frame
    path = match["file"]
    for root in ("site-packages/", "wt-22/", "/lib/python3.11/"):
        if root in path:
            path = path.split(root, 1)[1]
    return f"{match['func']} ({path})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("profile", type=Path)
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args(argv)
    by_activity: Counter[str] = Counter()
    by_self: Counter[str] = Counter()
    by_inclusive: Counter[str] = Counter()
    total = 0
    for line in args.profile.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = stack.split(";")
        if frames and frames[0].startswith("thread ("):
            frames = frames[1:]
        total += count
        by_activity[activity(frames)] += count
        if frames:
            by_self[short(frames[-1])] += count
        for frame in {short(f) for f in frames}:
            by_inclusive[frame] += count
    if not total:
        print("no samples")
        return 1
    print(f"{total} samples")
    print("\n| activity | share |\n| --- | ---: |")
    for name, count in by_activity.most_common():
        print(f"| {name} | {100 * count / total:.1f} % |")
    for title, counter in (("self", by_self), ("inclusive", by_inclusive)):
        print(f"\n| function ({title}) | share |\n| --- | ---: |")
        for name, count in counter.most_common(args.top):
            print(f"| `{name}` | {100 * count / total:.1f} % |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
