"""What the scheduling cycle needs from the API server, as protocols it receives: it imports no
client (the "pure" import contract holds for ``scheduling``), and its owners wire the real
parts in (``server/service.py``: ``apiserver.binder.Binder`` over ``ApiServerClient``; the
shadow: a ``Binder`` over writes that refuse).

- ``BindWriter``: the Binding (with the assignment's annotations) and the pod's events;
  ``apiserver.binder.Binder`` implements it;
- ``PodReader``: one pod read back at bind; ``ClaimReader``: one DRA ResourceClaim at bind
  (both implemented by ``apiserver.client.ApiServerClient`` and the offline cluster).

Each raises ``apiserver.errors.KubeError`` subclasses (``warn``/``notify`` never raise).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from extender.apiserver.events import Message
from extender.model import Assignment, PodKey


class BindWriter(Protocol):
    def bind(self, pod: PodKey, node: str, assignment: Assignment | None,
             extra: Mapping[str, str] | None = None) -> None:
        """Bind ``pod`` to ``node`` in one write that carries the assignment's annotations
        and ``extra``; idempotent (already bound there is a success)."""

    def warn(self, pod: PodKey, reason: str, message: Message) -> None:
        """Best effort: a Warning event on the pod."""

    def notify(self, pod: PodKey, reason: str, message: Message) -> None:
        """Best effort: a Normal event on the pod (a callable message is composed where the
        event is written)."""


class PodReader(Protocol):
    def get_pod(self, namespace: str, name: str) -> dict[str, Any]: ...


class ClaimReader(Protocol):
    def get_resource_claim(self, namespace: str, name: str) -> dict[str, Any]: ...
