"""Keeping the inventory equal to the cluster: list/watch, apply, reconcile, offline files."""
