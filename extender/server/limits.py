"""Bounds on what one HTTP request may cost, so that one client cannot starve the others.

- ``max_body_bytes``: a larger body is refused with 413 before it is read (werkzeug checks the
  announced length, and stops a chunked body at the limit). The largest legitimate body is the
  ``Nodes`` form of ExtenderArgs from a cluster-autoscaler simulation: about 5 KB per Node
  object, so 16 MiB covers 3,000 full nodes; ``NodeNames`` at 5,000 nodes is ~100 KB. The
  decoded body costs about three times its size in memory, per thread.
- ``body_read_timeout_s``: the longest a body may take to arrive once its headers have. A
  client that announces a body and never sends it would otherwise hold a worker thread
  forever; after the timeout it gets 408 and the thread is free again.
"""

from __future__ import annotations

from dataclasses import dataclass

MiB = 1 << 20


@dataclass(frozen=True)
class RequestLimits:
    max_body_bytes: int = 16 * MiB
    body_read_timeout_s: float = 10.0

    def __post_init__(self) -> None:
        if self.max_body_bytes < 1:
            raise ValueError(f"max_body_bytes={self.max_body_bytes}: must be >= 1")
        if not self.body_read_timeout_s > 0:
            raise ValueError(f"body_read_timeout_s={self.body_read_timeout_s}: must be > 0")


DEFAULT_LIMITS = RequestLimits()
