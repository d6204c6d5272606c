"""Publishes the node's ``gpu-extender.io/gpus`` annotation, only when it changes (compared with
what the Node carries now, so a hand edit or a restart is repaired, and an unchanged pass costs
no write and no watch event for every scheduler)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from extender.agent.nodeapi import AgentApi
from extender.model import ANNOTATION_NODE_GPUS

log = logging.getLogger(__name__)


class AnnotationPublisher:
    def __init__(self, api: AgentApi, node_name: str) -> None:
        self._api = api
        self._node = node_name

    def publish(self, node: Mapping[str, Any], document: str) -> bool:
        """Patch when the node's annotation differs from ``document``; True when it patched."""
        current = ((node.get("metadata") or {}).get("annotations") or {}).get(
            ANNOTATION_NODE_GPUS)
        if current == document:
            return False
        self._api.patch_node_annotations(self._node, {ANNOTATION_NODE_GPUS: document})
        log.info("node %s: published %s (%d bytes)", self._node, ANNOTATION_NODE_GPUS,
                 len(document))
        return True
