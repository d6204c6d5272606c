"""The admission webhook: refuse invalid GPU requests at creation, write the platform's mapping
(scheduler name, node affinity, tolerations, visible-devices env) into GPU pods.

Layers, importing downward only: ``command`` -> ``server`` -> ``app`` -> ``admit`` ->
(``mapping``, ``patch``, ``review``) -> ``extender.platform``. Stateless: every review is one
decode of one pod against the platform built at start.
"""
