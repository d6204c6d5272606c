"""What the webhook reads from the API server, when it is given access (``gpu-extender webhook
--watch-nodes``): a node watch feeding ``NodePools`` (shares only ``handoff: none`` pools could
hold are refused at creation, ``pools.py``).

Built in the gunicorn worker, after the fork (urllib3 pools are not fork-safe); the worker's exit
stops it. Without access the webhook judges every pod alone, as before.
"""

from __future__ import annotations

from typing import Any

from extender.apiserver.client import ApiServerClient
from extender.platform import Platform
from extender.sync.watch import ResourceSink, ResourceWatcher
from extender.webhook.pools import NodePools


class WebhookCluster:
    """Owns the client and the node watch's thread (``start``/``stop``)."""

    def __init__(self, platform: Platform, configuration: Any) -> None:
        self.api = ApiServerClient.from_configuration(configuration)
        self.pools = NodePools(platform)
        self._nodes = ResourceWatcher("nodes", self.api,
                                      ResourceSink(self.pools.apply, self.pools.replace))

    def start(self) -> None:
        self._nodes.start()

    def stop(self) -> None:
        self._nodes.stop()
