"""What the webhook reads from the API server, when it is given access: a node watch feeding
``NodePools`` (``--watch-nodes``: shares only ``handoff: none`` pools could hold are refused at
creation, ``pools.py``), and the pod an Eviction names (``--agent-user``: the node agent
evicts only pods on its own node, ``evictions.py``).

Built in the gunicorn worker, after the fork (urllib3 pools are not fork-safe); the worker's exit
stops it. Without access the webhook judges every pod alone, as before.
"""

from __future__ import annotations

from typing import Any

from extender.apiserver.client import ApiServerClient
from extender.platform import Platform
from extender.sync.watch import ResourceSink, ResourceWatcher
from extender.webhook.evictions import AgentEvictions
from extender.webhook.pools import NodePools


class WebhookCluster:
    """Owns the client and the node watch's thread (``start``/``stop``)."""

    def __init__(self, platform: Platform, configuration: Any, *, watch_nodes: bool,
                 agent_users: frozenset[str]) -> None:
        self.api = ApiServerClient.from_configuration(configuration)
        self.pools = NodePools(platform) if watch_nodes else None
        self._nodes = None if self.pools is None else ResourceWatcher(
            "nodes", self.api, ResourceSink(self.pools.apply, self.pools.replace))
        self.evictions = AgentEvictions(agent_users, self.api.get_pod) if agent_users else None

    def start(self) -> None:
        if self._nodes is not None:
            self._nodes.start()

    def stop(self) -> None:
        if self._nodes is not None:
            self._nodes.stop()
