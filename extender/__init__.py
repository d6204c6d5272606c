"""gpu-extender: a Kubernetes scheduler extender for GPU-type-aware and fraction-aware placement.

The layers, what each package does and what it may import are in ``docs/ARCHITECTURE.md``; the
import contract in ``.importlinter`` checks them in ``make lint``.
"""

__version__ = "0.1.0"
