"""A Lease-based leader election for the work only one replica may do (publishing the node
share capacity), in the manner of client-go's ``leaderelection``: the holder renews
``spec.renewTime`` every ``renew_s`` (2 s); another replica takes the lease once the holder has not
renewed for ``duration_s``. Writes go through the resourceVersion, so two replicas racing for an
expired lease cannot both win (the loser gets 409 and stays a follower).

Not a thread of its own: the caller (``CapacityPublisher``) asks ``leading()`` once per round,
which renews or tries to acquire at most every ``renew_s``.
"""

from __future__ import annotations

import logging
import socket
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

from extender.apiserver.errors import KubeError
from extender.kube import objects

_log = logging.getLogger(__name__)

LEASE_NAME = "gpu-extender-node-capacity"


class LeaseApi(Protocol):
    def get_lease(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def create_lease(self, namespace: str, body: Mapping[str, Any]) -> dict[str, Any]: ...

    def replace_lease(self, namespace: str, name: str, body: Mapping[str, Any]
                      ) -> dict[str, Any]: ...


def default_identity() -> str:
    """``<hostname>_<uuid>``, as kube-scheduler names itself."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def _micro_time(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _epoch(value: object) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class LeaderLease:
    def __init__(self, api: LeaseApi, namespace: str, *, name: str = LEASE_NAME,
                 identity: str | None = None, duration_s: int = 15, renew_s: float = 2.0,
                 clock: Callable[[], float] = time.time) -> None:
        self._api = api
        self.namespace = namespace
        self.name = name
        self.identity = identity or default_identity()
        self._duration = duration_s
        self._renew = renew_s
        self._clock = clock
        self._leading = False
        self._last_try = float("-inf")
        self._renewed_at = float("-inf")

    def leading(self) -> bool:
        """Whether this replica holds the lease now (renewing, or trying to acquire, at most
        every ``renew_s``)."""
        now = self._clock()
        if now - self._last_try >= self._renew:
            self._last_try = now
            self._try(now)
        if self._leading and now - self._renewed_at >= self._duration:
            self._set(False)  # could not renew in time: another replica may hold it now
        return self._leading

    def _try(self, now: float) -> None:
        try:
            lease = self._api.get_lease(self.namespace, self.name)
            if lease is None:
                self._api.create_lease(self.namespace, self._body(now, None, 0, now))
            else:
                spec = lease.get("spec") or {}
                holder = spec.get("holderIdentity") or ""
                renewed = _epoch(spec.get("renewTime")) or 0.0
                duration = spec.get("leaseDurationSeconds") or self._duration
                if holder != self.identity and holder and renewed + duration > now:
                    self._set(False)
                    return
                transitions = int(spec.get("leaseTransitions") or 0)
                acquired = _epoch(spec.get("acquireTime")) if holder == self.identity else None
                if holder != self.identity:
                    transitions += 1
                self._api.replace_lease(self.namespace, self.name, self._body(
                    now, objects.resource_version(lease), transitions,
                    acquired or now))
        except KubeError as exc:  # 409 lost a race; anything else: try again next round
            _log.info("leader lease not held", extra={"fields": {
                "lease": f"{self.namespace}/{self.name}", "error": str(exc)}})
            self._set(False)
            return
        self._renewed_at = now
        self._set(True)

    def _set(self, leading: bool) -> None:
        if leading != self._leading:
            _log.info("leader lease " + ("acquired" if leading else "lost"), extra={"fields": {
                "lease": f"{self.namespace}/{self.name}", "identity": self.identity}})
        self._leading = leading

    def _body(self, now: float, resource_version: str | None, transitions: int,
              acquired: float) -> dict[str, Any]:
        metadata: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if resource_version:
            metadata["resourceVersion"] = resource_version
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata,
                "spec": {"holderIdentity": self.identity,
                         "leaseDurationSeconds": self._duration,
                         "acquireTime": _micro_time(acquired), "renewTime": _micro_time(now),
                         "leaseTransitions": transitions}}
