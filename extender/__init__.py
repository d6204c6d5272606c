"""gpu-extender: a Kubernetes scheduler extender for GPU-type-aware and fraction-aware placement.

Layers (each imports only the ones below it)::

    cli, server, simulator        entry points
    inventory.sync, kube.binder   talk to the API server
    core                          fit / score / assign kernels (numpy, pure)
    inventory.store / snapshot    per-GPU struct-of-arrays state
    kube.decode                   Pod / Node JSON -> domain values
    config, catalog               what the platform engineer tunes
    model, errors, quantity       shared vocabulary
"""

__version__ = "0.1.0"
