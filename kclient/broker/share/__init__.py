"""Share groups (KIP-932) in the mini-broker: share partitions, the coordinator, durable state.

:mod:`.partition` is the in-flight record state machine, :mod:`.group` membership and
assignment, :mod:`.sessions` share sessions, :mod:`.reader` what a share fetch reads from a
log, :mod:`.store` the durable ``__share_group_state`` log, :mod:`.config` the settings and
:mod:`.coordinator` ties them together for the handlers.
"""

from __future__ import annotations

from .coordinator import ShareCoordinator

__all__ = ["ShareCoordinator"]
