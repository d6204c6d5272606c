"""Is a GPU fit for new pods? NVIDIA's own rules, as the k8s-device-plugin applies them.

The device plugin marks a GPU unhealthy on every XID except the ones NVIDIA documents as caused
by the application (13 graphics engine exception, 31 GPU memory page fault, 43 GPU stopped
processing, 45 preemptive cleanup, 68 video processor exception, 109 context switch timeout);
see NVIDIA's XID catalog (docs.nvidia.com/deploy/xid-errors) and the device plugin's
``internal/rm/health.go``. Retired pages waiting for a reset, a failed row remap and a lost GPU
(XID 79, ``GPU_IS_LOST``) are unhealthy too.
"""

from __future__ import annotations

from extender.agent.nvml import GpuState

APPLICATION_XIDS = frozenset({13, 31, 43, 45, 68, 109})
"""XIDs that an application causes; they say nothing about the GPU."""


def health_problems(gpu: GpuState) -> tuple[str, ...]:
    """Why the GPU must not receive pods (empty: healthy)."""
    reasons = []
    fatal = sorted({x for x in gpu.xid_errors if x not in APPLICATION_XIDS})
    if fatal:
        reasons.append("XID " + ",".join(map(str, fatal)))
    if gpu.retired_pages_pending:
        reasons.append("retired pages pending")
    if gpu.row_remap_failure:
        reasons.append("row remap failure")
    if gpu.lost:
        reasons.append("GPU lost")
    return tuple(reasons)
