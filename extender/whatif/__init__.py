"""What-if on a user's own cluster: pod manifests replayed against a cluster dump through the
offline service (the same verbs kube-scheduler calls), unlike ``extender.simulator``, which
replays traces through the core alone and never builds the HTTP service."""
