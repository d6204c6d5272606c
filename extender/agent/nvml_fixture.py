"""An NVML backend read from a JSON file (docs/agent-fixture.md): the seam for machines without
a GPU, and a tool to ask "what would the agent publish for this node?".

The file is re-read on every snapshot, so a test (or a person) can change what the "GPUs" report
while the agent runs. Validation names the field path, the value and what is accepted.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from extender.agent.errors import FixtureError
from extender.agent.nvml import GpuProcess, GpuState, MigInstanceState, NvmlSnapshot


class FixtureBackend:
    def __init__(self, path: str | Path) -> None:
        self._path = Path(path)

    def snapshot(self) -> NvmlSnapshot:
        try:
            doc = orjson.loads(self._path.read_bytes())
        except OSError as exc:
            raise FixtureError(f"NVML fixture {self._path}: cannot read ({exc.strerror})") from exc
        except orjson.JSONDecodeError as exc:
            raise FixtureError(f"NVML fixture {self._path}: not JSON ({exc})") from exc
        return parse_fixture(doc, source=str(self._path))

    def close(self) -> None:
        """Nothing to release."""


def parse_fixture(doc: object, *, source: str = "fixture") -> NvmlSnapshot:
    reader = _Reader(source)
    top = reader.mapping(doc, "")
    gpus = reader.list(top.get("gpus"), "gpus")
    states = tuple(reader.gpu(entry, f"gpus[{i}]") for i, entry in enumerate(gpus))
    seen: dict[int, str] = {}
    for i, gpu in enumerate(states):
        if gpu.index in seen:
            raise FixtureError(f"{source}: gpus[{i}].index: {gpu.index} is used twice "
                               "(accepted: distinct indices)")
        seen[gpu.index] = gpu.uuid
    return NvmlSnapshot(driver_version=reader.string(top.get("driverVersion", ""),
                                                     "driverVersion", required=False),
                        gpus=states)


class _Reader:
    def __init__(self, source: str) -> None:
        self._source = source

    def fail(self, path: str, value: object, accepted: str) -> FixtureError:
        return FixtureError(f"{self._source}: {path or '<document>'}: {value!r} "
                            f"(accepted: {accepted})")

    def mapping(self, value: object, path: str) -> Mapping[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(path, value, "a JSON object")
        return value

    def list(self, value: object, path: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(path, value, "a JSON list")
        return value

    def integer(self, value: object, path: str, minimum: int = 0) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.fail(path, value, f"an integer >= {minimum}")
        return value

    def string(self, value: object, path: str, *, required: bool = True) -> str:
        if not isinstance(value, str) or (required and not value):
            raise self.fail(path, value, "a non-empty string" if required else "a string")
        return value

    def flag(self, value: object, path: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(path, value, "true or false")
        return value

    def processes(self, value: object, path: str) -> tuple[GpuProcess, ...]:
        out = []
        for i, entry in enumerate(self.list(value, path)):
            where = f"{path}[{i}]"
            item = self.mapping(entry, where)
            out.append(GpuProcess(pid=self.integer(item.get("pid"), f"{where}.pid", 1),
                                  used_mib=self.integer(item.get("usedMemoryMiB"),
                                                        f"{where}.usedMemoryMiB")))
        return tuple(out)

    def gpu(self, entry: object, path: str) -> GpuState:
        item = self.mapping(entry, path)
        mig_enabled = self.flag(item.get("migEnabled", False), f"{path}.migEnabled")
        instances = []
        for i, raw in enumerate(self.list(item.get("migInstances"), f"{path}.migInstances")):
            where = f"{path}.migInstances[{i}]"
            inst = self.mapping(raw, where)
            instances.append(MigInstanceState(
                profile=self.string(inst.get("profile"), f"{where}.profile"),
                start=self.integer(inst.get("start"), f"{where}.start"),
                uuid=self.string(inst.get("uuid"), f"{where}.uuid"),
                processes=self.processes(inst.get("processes"), f"{where}.processes")))
        if instances and not mig_enabled:
            raise self.fail(f"{path}.migInstances", f"{len(instances)} instances",
                            "instances only when migEnabled is true")
        xids = tuple(self.integer(x, f"{path}.xidErrors[{i}]", 1)
                     for i, x in enumerate(self.list(item.get("xidErrors"), f"{path}.xidErrors")))
        return GpuState(
            index=self.integer(item.get("index"), f"{path}.index"),
            uuid=self.string(item.get("uuid"), f"{path}.uuid"),
            name=self.string(item.get("name"), f"{path}.name"),
            memory_total_mib=self.integer(item.get("memoryTotalMiB"), f"{path}.memoryTotalMiB",
                                          1),
            mig_enabled=mig_enabled,
            mig_instances=tuple(instances),
            processes=self.processes(item.get("processes"), f"{path}.processes"),
            xid_errors=xids,
            retired_pages_pending=self.flag(item.get("retiredPagesPending", False),
                                            f"{path}.retiredPagesPending"),
            row_remap_failure=self.flag(item.get("rowRemapFailure", False),
                                        f"{path}.rowRemapFailure"),
            lost=self.flag(item.get("lost", False), f"{path}.lost"),
        )
