"""Moved to ``extender.runtime.tls`` (issue 20); this name stays for branches in flight."""

from extender.runtime.command import flag_error
from extender.runtime.tls import ReloadingTlsContext, TlsFiles

__all__ = ["ReloadingTlsContext", "TlsFiles", "flag_error"]
