"""Read-only views for people: ``gpu-extender catalog`` and ``gpu-extender inspect``."""
