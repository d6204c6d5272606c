"""Shadow mode: watch a live cluster read-only and judge the placements another scheduler
makes against what gpu-extender would have done (``gpu-extender shadow``)."""
