"""Publishes the node's ``gpu-extender.io/gpus`` annotation, only when it changes (compared with
what the Node carries now, so a hand edit or a restart is repaired, and an unchanged pass costs
no write and no watch event for every scheduler).

The API server refuses an object whose annotations (keys and values) total more than 256 KiB
(``TotalAnnotationSizeLimitB``); a document that would not fit beside the node's other
annotations is not sent (``AnnotationTooLargeError``, a problem of the pass), so an oversized
inventory never turns into a patch refused every pass."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from extender.agent.errors import AgentError
from extender.agent.nodeapi import AgentApi
from extender.kube import objects
from extender.model import ANNOTATION_NODE_GPUS

log = logging.getLogger(__name__)

MAX_ANNOTATIONS_BYTES = 256 * 1024
"""What the API server accepts for all of an object's annotations together."""


class AnnotationTooLargeError(AgentError):
    """The gpus document does not fit in what the Node's annotations may hold."""


def annotation_budget(annotations: Mapping[str, Any]) -> int:
    """Bytes left for the gpus annotation's value beside the node's other annotations."""
    others = sum(len(str(key).encode()) + len(str(value).encode())
                 for key, value in annotations.items() if key != ANNOTATION_NODE_GPUS)
    return MAX_ANNOTATIONS_BYTES - others - len(ANNOTATION_NODE_GPUS.encode())


class AnnotationPublisher:
    def __init__(self, api: AgentApi, node_name: str) -> None:
        self._api = api
        self._node = node_name

    def publish(self, node: Mapping[str, Any], document: str) -> bool:
        """Patch when the node's annotation differs from ``document``; True when it patched."""
        annotations = objects.annotations(node)
        if annotations.get(ANNOTATION_NODE_GPUS) == document:
            return False
        budget = annotation_budget(annotations)
        size = len(document.encode())
        if size > budget:
            raise AnnotationTooLargeError(
                f"{ANNOTATION_NODE_GPUS} not published: {size} bytes, the node's annotations "
                f"leave {max(budget, 0)} (the API server accepts {MAX_ANNOTATIONS_BYTES} bytes "
                "of annotations per object)")
        self._api.patch_node_annotations(self._node, {ANNOTATION_NODE_GPUS: document})
        log.info("published the gpus annotation", extra={"fields": {
            "node": self._node, "annotation": ANNOTATION_NODE_GPUS, "bytes": size}})
        return True
