"""kube-scheduler's own filters, offline: what the in-tree plugins decide before the extender
is asked, so the what-if, explain and the shadow judge the nodes kube-scheduler would send.

Pure (Kubernetes JSON in, reasons out), one job per module:

- ``facts``: a Node as the filters read it (labels, taints, ``spec.unschedulable``, the Ready
  condition, allocatable) and a Pod (its requests summed as kube-scheduler sums them, host
  ports, tolerations, node selection);
- ``rules``: the filter plugins of the default profile, in its order, each citing the
  kube-scheduler source it follows; ``Rule`` is the closed set of exclusions;
- ``nodes``: ``KubeNodes``, the nodes and what the pods on them request (kube-scheduler's
  ``NodeInfo.Requested``), kept up to date by node and pod events, and ``filter``;
- ``reasons``: exclusions grouped for people ("3 nodes: node affinity/selector").
"""
