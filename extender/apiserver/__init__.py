"""Talking to the API server: the thin raw-JSON client and the protocols the service needs
(``client``), persisting a placement and binding (``binder``), and our error hierarchy for
failed calls (``errors``). The pure decoding of the objects it returns lives in
``extender.kube``."""
