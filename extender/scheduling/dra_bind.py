"""Bind on a DRA-managed node: the devices are the claim's, read back from the API.

kube-scheduler's DynamicResources PreBind creates the pod's extended-resource claim, allocates
it and writes ``pod.status.extendedResourceClaimStatus`` before it calls the extender's bind
(``docs/dra.md``), so at bind the allocation is in the API server: GET the pod for the claim's
name, GET the claim (the watch may lag), and record the devices DRA chose, with their UUIDs,
in ``gpu-extender.io/assigned``. Best effort: a claim that cannot be read leaves the pod bound
without the annotation (the claim watch still holds its devices), and says so in the log.
"""

from __future__ import annotations

import logging

from extender.apiserver.errors import KubeError
from extender.inventory.store import Inventory
from extender.kube import objects
from extender.kube.decode_dra import decode_claim, extended_claim_name
from extender.kube.shape import ShapeError
from extender.model import Assignment, NodeInfo, PodKey
from extender.scheduling.ports import ClaimReader, PodReader
from extender.sync.dra import pod_assignment

_log = logging.getLogger(__name__)


class DraBind:
    def __init__(self, inventory: Inventory, api: PodReader,
                 claims: ClaimReader | None) -> None:
        self._inventory = inventory
        self._api = api
        self._claims = claims

    def node(self, name: str) -> NodeInfo | None:
        """The node, if it is DRA-managed."""
        info = self._inventory.node_info(name)
        return info if info is not None and info.dra else None

    def devices(self, key: PodKey, node: NodeInfo) -> Assignment | None:
        """The devices the pod's claim was allocated on ``node`` (``None``: unknown)."""
        if self._claims is None:
            return None
        try:
            pod = self._api.get_pod(key.namespace, key.name)
            claim_name = extended_claim_name(pod)
            if objects.uid(pod) != key.uid or not claim_name:
                _log.warning("DRA pod without an extended-resource claim at bind", extra={
                    "fields": {"pod": str(key), "node": node.name}})
                return None
            claim = decode_claim(self._claims.get_resource_claim(key.namespace, claim_name))
        except (KubeError, ShapeError) as exc:
            _log.warning("DRA claim not read at bind; assigned not recorded", extra={
                "fields": {"pod": str(key), "node": node.name, "error": str(exc)}})
            return None
        assignment = pod_assignment(claim, node, self._inventory.catalog)
        if assignment is None or assignment.node != node.name:
            _log.warning("DRA claim holds no device on the node", extra={"fields": {
                "pod": str(key), "node": node.name, "claim": claim.name}})
            return None
        return assignment
