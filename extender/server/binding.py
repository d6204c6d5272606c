"""The bind verb: re-check, hold, persist, bind; release on any failure.

kube-scheduler binds in one goroutine per pod, so binds arrive concurrently. The decision (is
the pod's reservation on the chosen node? if not, which GPUs there?) and the strict
``Inventory.reserve`` happen under one lock, so two binds can never take the same whole GPU or
more VRAM than a GPU has; the API calls (annotate, Binding) run outside it, protected by the
reservation, so slow API round trips of different pods overlap.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from extender.apiserver.binder import Binder
from extender.apiserver.client import PodWriter
from extender.apiserver.errors import KubeError
from extender.core.assign import NoFitError, assign
from extender.errors import CapacityError, ExtenderError, UnknownNodeError
from extender.inventory.store import HoldingState, Inventory
from extender.model import Assignment, PodKey
from extender.server.metrics import ExtenderMetrics
from extender.server.pods import DecodedPod, PodRequests
from extender.server.wire import ExtenderBindingArgs, ExtenderBindingResult

_log = logging.getLogger(__name__)


class BindRefusedError(ExtenderError):
    """The bind cannot go ahead; ``outcome`` is the metric label."""

    def __init__(self, message: str, outcome: str) -> None:
        self.outcome = outcome
        super().__init__(message)


@dataclass(frozen=True)
class _Decision:
    assignment: Assignment | None
    """``None``: the pod holds no GPU (bind it like the default binder would)."""
    held_by_us: bool
    """A reservation of ours backs it (release it if the bind fails)."""
    already_bound: bool


class BindCoordinator:
    def __init__(self, inventory: Inventory, binder: Binder, pods: PodRequests,
                 api: PodWriter, metrics: ExtenderMetrics) -> None:
        self._inventory = inventory
        self._binder = binder
        self._pods = pods
        self._api = api
        self._metrics = metrics
        self._lock = threading.Lock()

    def bind(self, args: ExtenderBindingArgs) -> ExtenderBindingResult:
        key = PodKey(args["PodNamespace"], args["PodName"], args["PodUID"])
        node = args["Node"]
        try:
            # Looked up before taking the lock: an API round trip (after a restart the pod
            # is not cached) must not hold up the other binds.
            pod = self._pod(key)
            with self._lock:
                decision = self._decide(key, node, pod)
        except BindRefusedError as exc:
            self._metrics.decision("bind", exc.outcome)
            if exc.outcome == "conflict":
                self._metrics.bind_conflict()
            self._binder.warn(key, "GpuBindRefused", str(exc))
            return ExtenderBindingResult(Error=str(exc))
        except KubeError as exc:  # looking the pod up failed
            self._metrics.decision("bind", "api_error")
            return ExtenderBindingResult(Error=f"cannot read pod {key}: {exc}")
        completed = False
        try:
            self._binder.bind(key, node, decision.assignment)
            completed = True
        except KubeError as exc:
            self._metrics.decision("bind", "api_error")
            _log.warning("bind failed", extra={"fields": {"pod": str(key), "node": node,
                                                           "error": str(exc)}})
            self._binder.warn(key, "GpuBindFailed", f"binding to {node} failed: {exc}")
            return ExtenderBindingResult(Error=f"binding {key} to {node} failed: {exc}")
        finally:
            if not completed and decision.held_by_us:
                self._inventory.release(key.uid)
        self._inventory.mark_bound(key.uid)
        self._metrics.decision("bind", "already_bound" if decision.already_bound else "bound")
        return ExtenderBindingResult(Error="")

    def _decide(self, key: PodKey, node: str, pod: DecodedPod) -> _Decision:
        holding = self._inventory.holding(key.uid)
        if holding is not None and holding.state is not HoldingState.RESERVED:
            if holding.node == node:
                return _Decision(holding.assignment, False, True)  # a retried bind
            raise BindRefusedError(f"pod {key} is already bound to node {holding.node}",
                                   "refused")
        if pod.request is None:
            if pod.error:
                raise BindRefusedError(pod.error, "invalid_request")
            return _Decision(None, False, False)
        if holding is not None and holding.node == node and holding.assignment is not None:
            # Keep the GPUs prioritize chose, and pin them (no TTL) while the bind runs.
            try:
                self._inventory.reserve(key, holding.assignment, cpu_milli=holding.cpu_milli,
                                        memory_mib=holding.memory_mib, ttl=None)
                return _Decision(holding.assignment, True, False)
            except (CapacityError, UnknownNodeError):
                pass  # the hold expired just now and its GPUs went elsewhere: choose again
        if holding is not None:
            self._inventory.release(key.uid)  # held elsewhere: kube chose another node
        assert pod.placement is not None
        # A prioritize of another pod may reserve between our snapshot and our reserve (it does
        # not take this lock): the strict reserve notices, and one more look settles it.
        for attempt in range(2):
            snapshot = self._inventory.snapshot()
            row = snapshot.node_index.get(node)
            if row is None:
                raise BindRefusedError(f"node {node} is not in the GPU inventory", "refused")
            try:
                assignment = assign(snapshot, pod.placement, row)
                self._inventory.reserve(key, assignment, cpu_milli=pod.cpu_milli,
                                        memory_mib=pod.memory_mib, ttl=None)
                return _Decision(assignment, True, False)
            except (NoFitError, CapacityError, UnknownNodeError) as exc:
                if attempt == 1 or isinstance(exc, NoFitError):
                    raise BindRefusedError(f"no longer fits on {node}: {exc}", "conflict") from exc
        raise AssertionError("unreachable")

    def _pod(self, key: PodKey) -> DecodedPod:
        """The pod as filter saw it, else as the API has it now."""
        known = self._pods.get(key.uid)
        if known is not None and known.key == key:
            return known
        pod = self._pods.decode(self._api.get_pod(key.namespace, key.name))
        if pod.key.uid != key.uid:
            raise BindRefusedError(f"pod {key} was recreated (uid {pod.key.uid}, expected "
                              f"{key.uid})", "refused")
        return pod
