"""Unit constants shared by the core, its reference and the simulator. No imports, no state.

GPU compute is counted in thousandths of a GPU (the OpenB traces' ``gpu_milli``, FGD's
fragmentation levels). The node sizes are the ones FGD's simulator normalises its baseline
scores by (``MaxNodeCpuMilli``/``MaxNodeGpuMilli``): integers, so Go's integer division can be
reproduced exactly; ``x / MAX_*`` is true division either way.
"""

MILLI = 1000
"""Thousandths in one whole GPU."""

MAX_CPU_MILLI = 128_000
"""CPU millicores of the largest node the baseline scores normalise by (128 cores)."""

MAX_GPU_MILLI = 8_000
"""GPU thousandths of the largest node the baseline scores normalise by (8 GPUs)."""
