"""What the shadow concludes about one placement: small frozen values, no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Invariant(StrEnum):
    """The per-GPU rules gpu-extender never breaks, as the shadow names them."""

    WHOLE_GPU_SHARED = "whole-gpu-shared"
    """A whole GPU (or the node's last one) given to two pods."""
    VRAM_OVER_MEMORY = "vram-over-memory"
    """VRAM shares on one GPU add up to more than its memory."""
    PROTECTED_TYPE = "untyped-on-protected"
    """A pod that named no type on a protected type (A100/H100 class)."""
    WRONG_TYPE = "wrong-type"
    """A typed pod on a type it did not accept."""
    NO_CAPACITY = "no-capacity"
    """Any other over-commit: MIG instance or time-slice replica that is not free."""


@dataclass(frozen=True)
class Violation:
    invariant: Invariant
    detail: str

    def to_json(self) -> dict[str, str]:
        return {"invariant": self.invariant.value, "detail": self.detail}


@dataclass(frozen=True)
class Alternative:
    """Where gpu-extender would have put the pod (``node`` empty: it would have waited)."""

    node: str
    gpus: tuple[int, ...] = ()
    type_id: str = ""
    score: int | None = None
    reason: str = ""
    """Why it would wait (the most common reason over the candidate nodes)."""

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node or None, "gpus": list(self.gpus), "type": self.type_id or None,
                "score": self.score, "reason": self.reason or None}


@dataclass(frozen=True)
class ShadowRecord:
    """One GPU pod bound by another scheduler, judged on the state just before its bind."""

    pod: str
    scheduler: str
    request: str
    node: str
    gpus: tuple[int, ...]
    """The GPUs it most likely took (inferred with the core's assignment; empty when nothing
    on the node could hold it)."""
    type_id: str
    would: Alternative
    violations: tuple[Violation, ...] = field(default_factory=tuple)
    at: float = 0.0
    """Unix time the shadow saw the bind."""

    @property
    def agrees(self) -> bool:
        return self.would.node == self.node

    def to_json(self) -> dict[str, Any]:
        return {"pod": self.pod, "scheduler": self.scheduler, "request": self.request,
                "node": self.node, "gpus": list(self.gpus), "type": self.type_id or None,
                "would": self.would.to_json(), "agrees": self.agrees,
                "violations": [v.to_json() for v in self.violations], "at": round(self.at, 3)}
