"""A Warning event on a node whose GPUs cannot be decoded (unknown model, a malformed
``gpu-extender.io/gpus`` annotation, GPUs without a type label), so the problem shows in
``kubectl describe node`` and ``kubectl get events`` and not only in the extender's log.

One event per node and distinct set of problems: watch events that change nothing we read
are already dropped by the applier, and a node whose problems stay the same is not warned
about again until they change (or the process restarts). A failed write is logged and
dropped: a warning must never stop the watch.
"""

from __future__ import annotations

import logging
import threading

from extender.apiserver.client import NodeEventWriter
from extender.apiserver.errors import KubeError
from extender.model import NodeInfo

_log = logging.getLogger(__name__)

REASON = "GpuDecodeFailed"


class NodeWarnings:
    def __init__(self, writer: NodeEventWriter) -> None:
        self._writer = writer
        self._lock = threading.Lock()
        self._warned: dict[str, tuple[str, ...]] = {}
        self.sent_total = 0
        self.failed_total = 0

    def __call__(self, info: NodeInfo, uid: str) -> None:
        with self._lock:
            if not info.problems:
                self._warned.pop(info.name, None)
                return
            if self._warned.get(info.name) == info.problems:
                return
            self._warned[info.name] = info.problems
        message = "GPUs not understood, left out of scheduling or typed unknown: " + \
            "; ".join(info.problems)
        try:
            self._writer.record_node_event(info.name, uid, reason=REASON, message=message)
        except KubeError as exc:
            self.failed_total += 1
            _log.warning("node warning event not recorded", extra={"fields": {
                "node": info.name, "error": str(exc)}})
            return
        self.sent_total += 1

    def forget(self, node: str) -> None:
        with self._lock:
            self._warned.pop(node, None)
