"""``gpu-extender demand``: the autoscaler bridge. Pods the extender would place nowhere become
demand for whole GPUs of the types they accept, as utility pods or ProvisioningRequests.

Layers, importing downward only: ``command`` -> ``controller`` -> (``pending``, ``plan``,
``emit``, ``existing``) -> ``pack`` (pure). docs/autoscaling.md tells the user's side.
"""
