"""Client security: TLS contexts and handshakes, SASL mechanisms, resolved once per client.

:class:`SecuritySettings` is what ``ConnectionSettings`` carries; the connection calls
:meth:`SecuritySettings.secure` right after the TCP connect.
"""

from __future__ import annotations

from .settings import SecuritySettings

__all__ = ["SecuritySettings"]
