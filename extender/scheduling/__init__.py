"""The scheduling cycle: what happens to one pod between the HTTP verbs and the inventory.

- ``pods``: a pod decoded once (``DecodedPod``, its ``PlacementRequest``);
- ``cycle``: ``PodCycle``, kube-scheduler's ``CycleState`` per pod (UID, resourceVersion),
  and the ``CycleTable`` that keeps them;
- ``evaluate``: one pod against the candidate names (the fit, reused from the cycle);
- ``templates``: cluster-autoscaler template nodes, judged as described and empty;
- ``place``: score -> pick -> assign, shared with the simulator;
- ``filter``, ``prioritize``, ``bind``: the three steps; ``outcome``: their closed outcomes;
- ``expiry``: holds whose TTL passed; ``mix``: placed pods teach the workload mix;
- ``scheduler``: the composition, and the lock order;
- ``ports``: what it needs from the API server, as protocols it receives (``BindWriter``,
  ``PodReader``, ``ClaimReader``; ``apiserver.binder.Binder`` and the client implement them).

It imports the core, the inventory, ``kube``, ``platform``, ``sync``'s pure parts and
``apiserver``'s errors and event types, never a client, ``server`` or a web framework (the
"pure" import contract).
"""
