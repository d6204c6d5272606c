"""The node agent evicts only pods bound to its own node (``overusePolicy: evict``).

RBAC cannot say "pods on this node", and a ValidatingAdmissionPolicy on ``pods/eviction`` sees
the Eviction (``apiVersion``, ``kind``, ``metadata``, ``deleteOptions``) and the request, never
the pod it names (``tests/e2e/test_agent_evictions.py`` shows what it sees on the real
kube-apiserver). So the validating webhook judges the agent's Evictions: the pod the request
names (``request.name`` in ``request.namespace``) is read from the API server and must be bound
to the node the kubelet put into the agent's pod-bound token
(``userInfo.extra["authentication.kubernetes.io/node-name"]``, Kubernetes >= 1.32). The
webhook configuration sends only the agent's Evictions here (``matchConditions``) and fails
closed (``failurePolicy: Fail``): an eviction is an enforcement, and a webhook outage only
delays it. Anyone else's Evictions are not this check's business.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from extender.apiserver.errors import KubeError, NotFound
from extender.kube import objects

NODE_NAME_EXTRA = "authentication.kubernetes.io/node-name"


@dataclass(frozen=True)
class EvictionVerdict:
    allowed: bool
    outcome: str
    """For metrics: not-the-agent, own-node, gone, other-node, no-node-claim, unreadable."""
    message: str = ""


PodGetter = Callable[[str, str], Mapping[str, Any]]
"""``(namespace, name)`` -> the pod (raises ``NotFound``, ``KubeError``)."""


class AgentEvictions:
    def __init__(self, agent_users: frozenset[str], get_pod: PodGetter) -> None:
        self._agents = agent_users
        self._get_pod = get_pod

    def judge(self, username: str, extra: Mapping[str, tuple[str, ...]], namespace: str,
              name: str) -> EvictionVerdict:
        if username not in self._agents:
            return EvictionVerdict(True, "not-the-agent")
        claimed = (extra.get(NODE_NAME_EXTRA) or ("",))[0]
        if not claimed:
            return EvictionVerdict(False, "no-node-claim", (
                f"gpu-extender: {username} may evict only pods on its own node, and its "
                f"token names none (userInfo.extra[{NODE_NAME_EXTRA}]); accepted: the "
                f"pod-bound ServiceAccount token the kubelet projects (Kubernetes >= 1.32)"))
        try:
            pod = self._get_pod(namespace, name)
        except NotFound:
            return EvictionVerdict(True, "gone")  # the API server answers 404 itself
        except KubeError as exc:
            return EvictionVerdict(False, "unreadable", (
                f"gpu-extender: cannot read pod {namespace}/{name} to check that it is on "
                f"node {claimed!r} ({exc}); the agent retries on its next pass"))
        bound = objects.node_name(pod) or ""
        if bound == claimed:
            return EvictionVerdict(True, "own-node")
        return EvictionVerdict(False, "other-node", (
            f"gpu-extender: the gpu-extender agent of node {claimed!r} may evict only pods "
            f"bound to that node; pod {namespace}/{name} is "
            + (f"on node {bound!r}" if bound else "not bound to a node")))
