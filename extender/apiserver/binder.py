"""Persist a placement and bind, in one write: the Binding carries the annotations.

The annotations are the only persistent state (a restarted extender rebuilds its inventory from
them). The API server writes a Binding's annotations onto the pod in the same update that sets
``spec.nodeName``, so there is no moment at which a pod is bound without saying which GPUs it
holds, nor one at which it carries an assignment but no node; and a bind is one API request,
not two (this halved the writes per GPU pod; see benchmarks/bench_scheduler.py).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping

from extender.apiserver.client import PodWriter
from extender.apiserver.errors import Conflict, KubeError
from extender.apiserver.events import EventQueue, Message, PendingEvent
from extender.kube import objects
from extender.kube.annotations import encode_assignment, visible_devices
from extender.model import (
    ANNOTATION_ASSIGNED,
    ANNOTATION_OBSERVED,
    ANNOTATION_VISIBLE_DEVICES,
    Assignment,
    PodKey,
)

_log = logging.getLogger(__name__)


def assignment_annotations(assignment: Assignment) -> dict[str, str]:
    """What the Binding writes. ``assigned-observed`` is the node agent's alone: the Binding
    clears whatever the pod carried before it was bound (the API server copies a Binding's
    annotations over the pod's and cannot delete one, so cleared is ``""``, which every
    reader takes as absent)."""
    return {ANNOTATION_ASSIGNED: encode_assignment(assignment),
            ANNOTATION_VISIBLE_DEVICES: visible_devices(assignment),
            ANNOTATION_OBSERVED: ""}


class Binder:
    """``events``: the queue events go through (online); without one they are written
    before the call returns (offline, tests). ``placement_events``: write ``notify``'s
    Normal events (else only compose them: ``service.placementEvents``)."""

    def __init__(self, api: PodWriter, *, record_events: bool = True,
                 events: EventQueue | None = None, placement_events: bool = True) -> None:
        self._api = api
        self._record_events = record_events
        self._events = events
        self._placement_events = placement_events
        self._timed = threading.Lock()  # binds run on several threads
        self.requests = 0
        """Binding requests sent (answered or not)."""
        self.request_seconds = 0.0
        """Their wall time, from the request sent to its answer read (the bind's own share
        of the bind verb's latency is the rest: benchmarks/README.md, issue 22e)."""

    def bind(self, pod: PodKey, node: str, assignment: Assignment | None,
             extra: Mapping[str, str] | None = None) -> None:
        """Bind, with the assignment's annotations when the pod holds GPUs, and ``extra``
        (the CDI handoff, ``scheduling/handoff.py``); raises ``KubeError``.

        Idempotent: a Binding refused with 409 because the same pod is already on ``node``
        (kube-scheduler retries a bind whose answer it did not get) is a success.
        """
        annotations = assignment_annotations(assignment) if assignment is not None else None
        if extra:
            annotations = {**(annotations or {}), **extra}
        try:
            self._create(pod, node, annotations)
        except Conflict as exc:
            current = self._api.get_pod(pod.namespace, pod.name)
            uid = objects.uid(current)
            bound_to = objects.node_name(current)
            if uid == pod.uid and bound_to == node:
                return
            if uid != pod.uid:
                raise Conflict(f"pod {pod} was recreated (uid {uid}, expected {pod.uid})",
                               status=409) from exc
            raise Conflict(f"pod {pod} is already bound to node {bound_to!r}"
                           if bound_to else str(exc), status=409) from exc

    def _create(self, pod: PodKey, node: str, annotations: Mapping[str, str] | None) -> None:
        started = time.monotonic()
        try:
            self._api.create_binding(pod.namespace, pod.name, pod.uid, node, annotations)
        finally:
            spent = time.monotonic() - started
            with self._timed:
                self.requests += 1
                self.request_seconds += spent

    def warn(self, pod: PodKey, reason: str, message: Message) -> None:
        """Best effort: a Warning event on the pod (``kubectl describe`` shows why a bind
        failed); never raises."""
        self._event(pod, reason, message, "Warning")

    def notify(self, pod: PodKey, reason: str, message: Message) -> None:
        """Best effort: a Normal event on the pod (where its GPUs are, and why), after the
        Binding; never raises, so a failed event never fails the bind. A callable message
        is composed where the event is written (the queue's thread, online)."""
        self._event(pod, reason, message, "Normal", write=self._placement_events)

    def _event(self, pod: PodKey, reason: str, message: Message, event_type: str, *,
               write: bool = True) -> None:
        if not self._record_events:
            return
        if self._events is not None:
            self._events.submit(PendingEvent(pod, reason, event_type, message, write))
            return
        text = message if isinstance(message, str) else message()
        if not write:
            return
        try:
            self._api.record_event(pod, reason=reason, message=text, event_type=event_type)
        except KubeError as exc:
            _log.warning("could not record event", extra={"fields": {
                "pod": str(pod), "reason": reason, "error": str(exc)}})
