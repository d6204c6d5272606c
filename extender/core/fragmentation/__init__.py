"""FGD's node fragmentation: ``model`` (the tables and formulas of one typical-shape mix) and
``scorer`` (F before and after a pod, in step with the workload mix)."""
