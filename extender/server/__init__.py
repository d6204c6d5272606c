"""The HTTP service kube-scheduler calls: filter, prioritize, bind, health, metrics, debug."""
