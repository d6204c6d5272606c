"""``gpu-extender demand``: the autoscaler bridge. Pods the extender would place nowhere become
demand for whole GPUs of the types they accept, as utility pods or ProvisioningRequests.

Layers, importing downward only: ``command`` -> ``service`` -> ``controller`` -> (``pending``
on the ``view``, ``offers``, ``emit``, ``decide``) -> ``pack`` (pure); ``judge`` builds the
scheduling core the pods are judged with. docs/autoscaling.md tells the user's side.
"""
