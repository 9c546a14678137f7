"""When a client goes back to its bootstrap servers (KIP-899, KIP-1102), decided once for the
threaded :class:`kclient.cluster.Cluster` and the asyncio :class:`kclient.aio.cluster.AIOCluster`.

Theory of operation.  A client first asks the bootstrap list for metadata; from then on it asks
the brokers that metadata named.  If every known broker fails to answer, or none has answered
for ``metadata.recovery.rebootstrap.trigger.ms``, the cluster may have been replaced under the
client (new brokers at new addresses).  With ``metadata.recovery.strategy=rebootstrap`` (Kafka 4's
default) the client then asks the bootstrap list again, as if it had just started; with ``none``
it keeps to the brokers it knows and reports them unreachable.

:class:`MetadataRecovery` holds no I/O and no clock: the drivers pass ``now`` (monotonic seconds)
and report what happened (:meth:`answered`, :meth:`failed`); :meth:`plan` says whom to ask next.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MetadataRecovery", "Plan", "NONE", "REBOOTSTRAP", "STRATEGIES"]

NONE, REBOOTSTRAP = "none", "rebootstrap"
STRATEGIES = (NONE, REBOOTSTRAP)

#: ``(key, host, port)``: the key names a known broker (its node id) or a bootstrap address.
Candidate = tuple[int | str, str, int]


@dataclass(frozen=True)
class Plan:
    """Whom to ask for metadata, in order, and whether that is a rebootstrap."""

    candidates: list[Candidate]
    rebootstrap: bool


class MetadataRecovery:
    """The rebootstrap decision of one client (see the module docstring)."""

    def __init__(self, strategy: str = REBOOTSTRAP, trigger_ms: int = 300_000) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(
                f"metadata.recovery.strategy must be one of {', '.join(STRATEGIES)},"
                f" not {strategy!r}"
            )
        if trigger_ms < 0:
            raise ValueError(
                f"metadata.recovery.rebootstrap.trigger.ms must be >= 0, not {trigger_ms}"
            )
        self.strategy = strategy
        self.trigger_s = trigger_ms / 1000.0
        #: when the known brokers started failing to give metadata (None: they answer)
        self.failing_since: float | None = None
        #: times the bootstrap list answered after the known brokers had failed
        self.rebootstraps = 0

    def plan(self, known: list[Candidate], bootstrap: list[Candidate], now: float) -> Plan:
        """Whom to ask now: the bootstrap list before any metadata; the known brokers after,
        followed by the bootstrap list (rebootstrap strategy); the bootstrap list alone once
        the known brokers gave nothing for the trigger time."""
        if not known:
            return Plan(_unique(bootstrap), False)
        if self.strategy == NONE:
            return Plan(_unique(known), False)
        if self.failing_since is not None and now - self.failing_since >= self.trigger_s:
            return Plan(_unique(bootstrap), True)
        return Plan(_unique(known + bootstrap), False)

    def answered(self, candidate: Candidate, known: list[Candidate], now: float) -> bool:
        """``candidate`` gave metadata at ``now``; True when that was a rebootstrap (a bootstrap
        address answered after every known broker had failed)."""
        del now
        rebootstrapped = (
            bool(known)
            and self.failing_since is not None
            and not any(candidate[1:] == k[1:] for k in known)
        )
        self.failing_since = None
        if rebootstrapped:
            self.rebootstraps += 1
        return rebootstrapped

    def failed(self, candidate: Candidate, known: list[Candidate], now: float) -> None:
        """``candidate`` gave no metadata at ``now`` (connect, timeout, broken answer)."""
        if known and any(candidate[1:] == k[1:] for k in known) and self.failing_since is None:
            self.failing_since = now


def _unique(candidates: list[Candidate]) -> list[Candidate]:
    """Each address once, first occurrence kept."""
    seen: set[tuple[str, int]] = set()
    out = []
    for key, host, port in candidates:
        if (host, port) not in seen:
            seen.add((host, port))
            out.append((key, host, port))
    return out
