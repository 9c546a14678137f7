"""AdminClient's consumer-group operations: list, describe, delete, offsets, lag and reset.

Groups coordinated by the brokers are reached through their coordinator (FindCoordinator);
0.8 groups keep their offsets in ZooKeeper (``/consumers/<group>/offsets/<topic>/<n>``) and are
read and written there when ``storage="zookeeper"`` (``zookeeper_connect`` required).  Lag is
Kafka's: log end offset minus the committed offset, per partition, None where nothing is
committed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kclient.consumer.group_connector import decode_assignment
from kclient.consumer.offsets import Coordinator
from kclient.core.offsets import fetched_group, offset_commit_body, offset_fetch_body
from kclient.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    GroupIdNotFoundError,
    KafkaConnectionError,
    NonEmptyGroupError,
    NotCoordinatorError,
    ProtocolDecodeError,
)
from kclient.protocol.apis import (
    DELETE_GROUPS,
    DESCRIBE_GROUPS,
    LIST_GROUPS,
    OFFSET_COMMIT,
    OFFSET_DELETE,
    OFFSET_FETCH,
)

from . import zk_groups
from .base import as_partition, by_topic, check, offsets_map
from .consumer_groups import describe_consumer_groups
from .topics import TopicAdmin
from .types import (
    ConsumerGroupDescription,
    GroupDescription,
    GroupLag,
    GroupListing,
    MemberDescription,
    OffsetAndMetadata,
    OffsetReset,
    OffsetSpec,
    PartitionLag,
    TopicPartition,
)

__all__ = ["GroupAdmin", "RESET_STRATEGIES"]

#: reset_consumer_group_offsets strategies, as kafka-consumer-groups names them.
RESET_STRATEGIES = ("earliest", "latest", "current", "offset", "timestamp", "shift")
_INACTIVE = ("Empty", "Dead")
#: COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR: ask again.
_COORDINATOR_CODES = (14, 15, 16)


def _codes(resp: Any) -> int:
    """The first coordinator error anywhere in a group response (top level, per group, per
    result, per partition), so that the coordinator is rediscovered and the request retried;
    other codes are left to the caller."""
    found = [resp.get("error_code", 0) or 0]
    for key in ("groups", "results"):
        found += [g.error_code for g in resp.get(key) or ()]
    for t in resp.get("topics") or ():
        found += [p.error_code for p in t.partitions]
    return next((c for c in found if c in _COORDINATOR_CODES), 0)


def _member(m: Any) -> MemberDescription:
    """A member with its decoded consumer-protocol assignment."""
    try:
        parts, _ = decode_assignment(bytes(m.member_assignment or b""))
    except Exception:  # noqa: BLE001 - a non-consumer protocol's assignment is opaque
        parts = {}
    assignment = tuple(TopicPartition(t, p) for t in sorted(parts) for p in sorted(parts[t]))
    return MemberDescription(
        m.member_id, m.client_id, m.client_host, m.get("group_instance_id"), assignment
    )


class GroupAdmin(TopicAdmin):
    """Consumer groups, their committed offsets and lag."""

    def _coordinator(self, group: str) -> Coordinator:
        """The group's coordinator (found once, rediscovered when it moves)."""
        cache: dict[str, Coordinator] = self.__dict__.setdefault("_coordinators", {})
        if group not in cache:
            self._any()
            cache[group] = Coordinator(self.cluster, group, backoff_ms=300, retries=20)
        return cache[group]

    def close(self) -> None:
        """Close the coordinators' connections too."""
        for coordinator in self.__dict__.pop("_coordinators", {}).values():
            coordinator.close()
        super().close()

    # -- groups ------------------------------------------------------------------------------
    def list_groups(
        self, storage: str = "kafka", types: Iterable[str] | None = None
    ) -> list[GroupListing]:
        """Every group: asks each broker (each lists the groups it coordinates); with
        storage="zookeeper" the 0.8 groups under /consumers, "all" both.  ``types`` keeps
        the groups of those types only (classic, consumer, share, streams; ListGroups v5)."""
        wanted = sorted({t.lower() for t in types}) if types is not None else []
        out: dict[str, GroupListing] = {}
        if storage in ("kafka", "all"):
            self.cluster.refresh([], allow_auto_create=False)
            for node_id in sorted(self.cluster.brokers):
                resp = self.cluster.connection(node_id).request(
                    LIST_GROUPS, {"states_filter": [], "types_filter": wanted}
                )
                check(resp.error_code, f"listing the groups of broker {node_id}")
                for g in resp.groups:
                    kind = (g.get("group_type") or "classic").lower()
                    if wanted and kind not in wanted:  # a broker before ListGroups v5
                        continue
                    out[g.group_id] = GroupListing(
                        g.group_id, g.protocol_type, g.get("group_state") or "", kind
                    )
        if storage in ("zookeeper", "all") and not wanted:
            for listing in zk_groups.list_groups(self.zk()):
                out.setdefault(listing.group_id, listing)
        return [out[g] for g in sorted(out)]

    def describe_groups(
        self, group_ids: Iterable[str], storage: str = "kafka"
    ) -> dict[str, GroupDescription]:
        """State, protocol, members and their assignments; GroupIdNotFoundError for a group
        the coordinator does not know."""
        out = {}
        for group in group_ids:
            if storage == "zookeeper":
                out[group] = zk_groups.describe(self.zk(), group)
                continue
            coordinator = self._coordinator(group)
            resp = coordinator.request(
                DESCRIBE_GROUPS,
                {"groups": [group], "include_authorized_operations": False},
                check=_codes,
            )
            for g in resp.groups:
                check(g.error_code, f"group {group!r}", g.get("error_message"))
                if g.group_state == "Dead":
                    raise GroupIdNotFoundError(f"group {group!r}")
                out[group] = GroupDescription(
                    group,
                    g.group_state,
                    g.protocol_type,
                    g.protocol_data,
                    tuple(_member(m) for m in g.members),
                    -1 if coordinator.node_id is None else coordinator.node_id,
                )
        return out

    def describe_consumer_groups(
        self, group_ids: Iterable[str]
    ) -> dict[str, ConsumerGroupDescription]:
        """KIP-848 groups with their group and assignment epochs and each member's epoch,
        assignment and target assignment (ConsumerGroupDescribe); classic groups as
        DescribeGroups reports them."""
        return describe_consumer_groups(self, group_ids)

    def delete_groups(self, group_ids: Iterable[str], storage: str = "kafka") -> None:
        """DeleteGroups; NonEmptyGroupError for a group with members, GroupIdNotFoundError for
        an unknown one."""
        for group in group_ids:
            if storage == "zookeeper":
                zk_groups.delete(self.zk(), group)
                continue
            resp = self._coordinator(group).request(
                DELETE_GROUPS, {"groups_names": [group]}, check=_codes
            )
            for r in resp.results:
                check(r.error_code, f"deleting group {r.group_id!r}")

    # -- offsets -----------------------------------------------------------------------------
    def list_consumer_group_offsets(
        self, group: str, partitions: Iterable[Any] | None = None, storage: str = "kafka"
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """A group's committed offsets (all of them, or of ``partitions``); partitions without
        one are left out."""
        wanted = None if partitions is None else [as_partition(p) for p in partitions]
        if storage == "zookeeper":
            return zk_groups.fetch_offsets(self.zk(), group, wanted)
        resp = fetched_group(self._offset_fetch(group, wanted))
        check(resp.get("error_code", 0), f"offsets of group {group!r}")
        out = {}
        for t in resp.topics:
            for p in t.partitions:
                check(p.error_code, f"offset of group {group!r} for {t.name}-{p.partition_index}")
                if p.committed_offset >= 0:
                    out[TopicPartition(t.name, p.partition_index)] = OffsetAndMetadata(
                        p.committed_offset, p.metadata or "", p.get("committed_leader_epoch", -1)
                    )
        return dict(sorted(out.items()))

    def _offset_fetch(self, group: str, wanted: list[TopicPartition] | None) -> Any:
        """OffsetFetch of ``wanted`` (None: every partition).  A broker that answers "every
        partition" with a null topic array (tansu) is asked again for every known topic."""
        body = offset_fetch_body(
            group, None if wanted is None else [(tp.topic, tp.partition) for tp in wanted]
        )
        coordinator = self._coordinator(group)
        if wanted is not None:
            return coordinator.request(OFFSET_FETCH, body, check=_codes)
        try:
            return coordinator.request(OFFSET_FETCH, body, check=_codes, retries=0)
        except KafkaConnectionError as exc:
            if not isinstance(exc.__cause__, ProtocolDecodeError):
                return coordinator.request(OFFSET_FETCH, body, check=_codes)
        except (NotCoordinatorError, CoordinatorLoadInProgressError, CoordinatorNotAvailableError):
            return coordinator.request(OFFSET_FETCH, body, check=_codes)
        everything = self._partitions_of(t.name for t in self.list_topics())
        return (
            self._offset_fetch(group, everything)
            if everything
            else self._coordinator(group).request(
                OFFSET_FETCH, offset_fetch_body(group, []), check=_codes
            )
        )

    def alter_consumer_group_offsets(
        self, group: str, offsets: Mapping[Any, int | OffsetAndMetadata], storage: str = "kafka"
    ) -> None:
        """Commit offsets for a group that has no active members (Kafka refuses a live group
        with UNKNOWN_MEMBER_ID, raised here as NonEmptyGroupError)."""
        values = {
            tp: v if isinstance(v, OffsetAndMetadata) else OffsetAndMetadata(int(v))
            for tp, v in offsets_map(offsets).items()
        }
        if storage == "zookeeper":
            zk_groups.commit_offsets(self.zk(), group, values)
            return
        body = offset_commit_body(
            group, {(tp.topic, tp.partition): (v.offset, v.metadata) for tp, v in values.items()}
        )
        resp = self._coordinator(group).request(OFFSET_COMMIT, body, check=_codes)
        for t in resp.topics:
            for p in t.partitions:
                if p.error_code == 25:  # UNKNOWN_MEMBER_ID: the group has live members
                    raise NonEmptyGroupError(
                        f"group {group!r} has active members: its offsets can only be altered "
                        "while it is inactive"
                    )
                check(p.error_code, f"committing {t.name}-{p.partition_index} for {group!r}")

    def delete_consumer_group_offsets(self, group: str, partitions: Iterable[Any]) -> None:
        """OffsetDelete: forget a group's offsets of topics it no longer reads
        (GroupSubscribedToTopicError for a topic a member still reads)."""
        wanted = [as_partition(p) for p in partitions]
        body = {
            "group_id": group,
            "topics": [
                {"name": t, "partitions": [{"partition_index": p} for p in ps]}
                for t, ps in by_topic(wanted).items()
            ],
        }
        resp = self._coordinator(group).request(OFFSET_DELETE, body, check=_codes)
        check(resp.error_code, f"deleting offsets of group {group!r}")
        for t in resp.topics:
            for p in t.partitions:
                check(
                    p.error_code,
                    f"deleting the offset of {t.name}-{p.partition_index} for {group!r}",
                )

    # -- lag ---------------------------------------------------------------------------------
    def _log_ends(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The log end offset (high watermark) of each partition."""
        wanted = list(partitions)
        if not wanted:
            return {}
        found = self.list_offsets(dict.fromkeys(wanted, OffsetSpec.LATEST))
        return {tp: r.offset for tp, r in found.items()}

    def consumer_group_lag(self, group: str, storage: str = "kafka") -> GroupLag:
        """``kafka-consumer-groups --describe``: per partition the committed offset, the log
        end offset, the lag and the owning member, for every partition the group has an offset
        for or is assigned."""
        description = self.describe_groups([group], storage)[group]
        owners = {tp: m for m in description.members for tp in m.assignment}
        committed = self.list_consumer_group_offsets(group, storage=storage)
        partitions = sorted(set(committed) | set(owners))
        ends = self._log_ends(partitions)
        rows = []
        for tp in partitions:
            current = committed[tp].offset if tp in committed else -1
            end = ends.get(tp, -1)
            member = owners.get(tp)
            rows.append(
                PartitionLag(
                    tp.topic,
                    tp.partition,
                    current,
                    end,
                    max(0, end - current) if current >= 0 and end >= 0 else None,
                    member.member_id if member else "-",
                    member.host if member else "-",
                    member.client_id if member else "-",
                )
            )
        return GroupLag(group, description.state, tuple(rows), storage)

    # -- reset -------------------------------------------------------------------------------
    def reset_consumer_group_offsets(
        self,
        group: str,
        topics: Iterable[Any] | None = None,
        *,
        strategy: str = "earliest",
        value: int | None = None,
        dry_run: bool = True,
        storage: str = "kafka",
    ) -> list[OffsetReset]:
        """Kafka's ``--reset-offsets``: plan (``dry_run``) or commit new offsets for the
        partitions of ``topics`` (topic names or TopicPartitions; None: those the group has
        offsets for).  ``strategy``: earliest, latest, current, offset (``value``), timestamp
        (``value`` ms; past the last record: latest) or shift (by ``value``); results are kept
        within [earliest, latest] as Kafka does.  The group must be inactive."""
        if strategy not in RESET_STRATEGIES:
            raise ValueError(f"strategy {strategy!r} is not one of {', '.join(RESET_STRATEGIES)}")
        if strategy in ("offset", "timestamp", "shift") and value is None:
            raise ValueError(f"strategy {strategy!r} needs a value")
        description = (
            self.describe_groups([group], storage)[group]
            if storage == "zookeeper"
            else self._describe_or_dead(group)
        )
        if description.state not in _INACTIVE:
            raise NonEmptyGroupError(
                f"Assignments can only be reset if the group '{group}' is inactive, but the "
                f"current state is {description.state}."
            )
        committed = self.list_consumer_group_offsets(group, storage=storage)
        partitions = self._reset_partitions(topics, committed)
        plan = self._plan(partitions, committed, strategy, value)
        if not dry_run and plan:
            self.alter_consumer_group_offsets(
                group,
                {TopicPartition(r.topic, r.partition): r.new_offset for r in plan},
                storage=storage,
            )
        return plan

    def _describe_or_dead(self, group: str) -> GroupDescription:
        """The group, or an empty Dead one when the coordinator does not know it."""
        try:
            return self.describe_groups([group])[group]
        except GroupIdNotFoundError:
            return GroupDescription(group, "Dead", "", "", (), -1)

    def _reset_partitions(
        self, topics: Iterable[Any] | None, committed: Mapping[TopicPartition, OffsetAndMetadata]
    ) -> list[TopicPartition]:
        """The partitions a reset covers."""
        if topics is None:
            return sorted(committed)
        names = [t for t in topics if isinstance(t, str)]
        explicit = [as_partition(t) for t in topics if not isinstance(t, str)]
        return sorted(set(self._partitions_of(names)) | set(explicit))

    def _plan(
        self,
        partitions: list[TopicPartition],
        committed: Mapping[TopicPartition, OffsetAndMetadata],
        strategy: str,
        value: int | None,
    ) -> list[OffsetReset]:
        """The new offset of each partition under ``strategy``."""
        if not partitions:
            return []
        earliest = {
            tp: r.offset
            for tp, r in self.list_offsets(dict.fromkeys(partitions, OffsetSpec.EARLIEST)).items()
        }
        latest = {
            tp: r.offset
            for tp, r in self.list_offsets(dict.fromkeys(partitions, OffsetSpec.LATEST)).items()
        }
        by_time: dict[TopicPartition, int] = {}
        if strategy == "timestamp":
            assert value is not None
            by_time = {
                tp: r.offset
                for tp, r in self.list_offsets(dict.fromkeys(partitions, value)).items()
            }
        plan = []
        for tp in partitions:
            current = committed[tp].offset if tp in committed else -1
            lo, hi = earliest[tp], latest[tp]
            if strategy == "earliest":
                new = lo
            elif strategy == "latest":
                new = hi
            elif strategy == "current":
                new = current if current >= 0 else hi
            elif strategy == "offset":
                new = int(value or 0)
            elif strategy == "timestamp":
                new = by_time[tp] if by_time.get(tp, -1) >= 0 else hi
            else:
                new = (current if current >= 0 else hi) + int(value or 0)
            plan.append(OffsetReset(tp.topic, tp.partition, current, min(max(new, lo), hi)))
        return plan
