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

# Bounds on what a node or pod may describe. Real hardware stays far below them (16 GPUs per
# node, 48 time-slice replicas, 288 GB per GPU); past them a value is a typo or an attack, and
# modelling it would cost memory (one object per GPU) or overflow the inventory's arrays
# (replicas are int16). The decoders refuse (pods) or cut and report (nodes) beyond them.
MAX_GPUS_PER_NODE = 64
"""Physical GPUs modelled per node; more are reported in the node's problems and dropped."""

MAX_REPLICAS_PER_GPU = 1024
"""Time-slice replicas modelled per GPU (the inventory keeps them as int16)."""

MAX_GPU_MEMORY_MIB = 1 << 20
"""1 TiB: the most memory one GPU may be described with."""

MAX_GPU_INDEX = 1024
"""Physical GPU indices are 0..MAX_GPU_INDEX - 1 (the inventory keeps them as int16)."""

MAX_MIG_SLOTS = 8
"""Memory slots of a MIG-partitioned GPU (the inventory's MIG masks are uint8)."""

MAX_GPUS_PER_POD = MAX_GPUS_PER_NODE
"""A pod's GPUs must fit one node, so it can never need more than a node may have."""

MAX_UNITS_PER_NODE = MAX_GPUS_PER_NODE * MAX_REPLICAS_PER_GPU
"""Largest allocatable count read for one GPU resource (GPUs x replicas, or MIG instances)."""
