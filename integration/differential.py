"""Differential testing: the same requests to a real Apache Kafka and to the mini-broker, the
responses compared field by field.

A :class:`Twin` holds one kclient :class:`BrokerConnection` to each broker. ``twin.request``
sends a request at a pinned version to both and records every difference of the normalised
responses under the running case. Normalised are only what differs by nature: ids (node, member,
producer, cluster, topic, session), host and port, throttle times, and free-text error messages
(compared as present or absent). Record sets are compared decoded (every batch and record field
but the CRC) and by their byte length.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kclient.connection import BrokerConnection
from kclient.errors import KafkaConnectionError, KafkaError
from kclient.protocol.records import RecordsReader
from kclient.protocol.schema import Api, Struct

__all__ = ["Twin", "normalise", "differences", "CLOSED", "raw_request"]

#: Fields whose values are ids, addresses or timings: equal by construction after normalising.
NORMALISED = {
    "throttle_time_ms",
    "cluster_id",
    "node_id",
    "leader_id",
    "controller_id",
    "host",
    "port",
    "replica_nodes",
    "isr_nodes",
    "producer_id",
    "member_id",
    "leader",
    "topic_id",
    "session_id",
    "coordinator_key",
    "broker_id",
}
#: Free text: only whether there is one is compared.
TEXT = {"error_message", "batch_index_error_message"}
#: API key -> the oldest version Kafka 4.x serves (KIP-896), where it dropped older ones.
KAFKA4_MIN = {0: 3, 1: 4, 2: 1, 8: 2, 9: 1, 19: 2, 20: 1}
#: The connection was closed instead of answered.
CLOSED = "<connection closed>"


def _records(raw: Any) -> dict:
    """A record set as comparable data: its size and every batch and record (no CRC)."""
    data = bytes(raw or b"")
    batches: list[dict] = []
    try:
        _decode_batches(data, batches)
    except KafkaError as exc:  # a broker that stored what it should have refused
        return {"bytes": len(data), "batches": batches, "undecodable": type(exc).__name__}
    return {"bytes": len(data), "batches": batches}


def _decode_batches(data: bytes, batches: list[dict]) -> None:
    """Append every batch of ``data`` to ``batches`` as comparable data."""
    reader = RecordsReader(data)
    for b in reader.batches():
        batches.append(
            {
                "magic": b.magic,
                "base_offset": b.base_offset,
                "last_offset": b.last_offset,
                "codec": b.codec,
                "timestamp_type": b.timestamp_type,
                "producer_epoch": b.producer_epoch,
                "base_sequence": b.base_sequence,
                "partition_leader_epoch": b.partition_leader_epoch,
                "max_timestamp": b.max_timestamp,
                "size": b.size,
                "records": [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in b.records],
            }
        )


def normalise(value: Any, name: str = "") -> Any:
    """Plain data with ids, timings and message texts neutralised (see the module docstring)."""
    if name in NORMALISED:
        return "<id>" if value not in (None, -1, "", []) else value
    if name in TEXT:
        return None if value is None else "<text>"
    if name == "records":
        return _records(value)
    if isinstance(value, Struct):
        value = value.to_dict()
    if isinstance(value, dict):
        return {k: normalise(v, k) for k, v in value.items() if k != "_tagged_fields"}
    if isinstance(value, list):
        return [normalise(v, name) for v in value]
    if isinstance(value, memoryview | bytearray):
        return bytes(value)
    return value


def _ordered(value: Any, order_by: dict[str, str], name: str = "") -> Any:
    """Sort the lists named in ``order_by`` by their elements' given key, at any depth."""
    if isinstance(value, dict):
        return {k: _ordered(v, order_by, k) for k, v in value.items()}
    if isinstance(value, list):
        items = [_ordered(v, order_by) for v in value]
        key = order_by.get(name)
        return sorted(items, key=lambda v: v[key]) if key else items
    return value


def differences(real: Any, mini: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """(path, real value, mini value) for every leaf where two normalised values differ."""
    if isinstance(real, dict) and isinstance(mini, dict):
        out = []
        for key in list(real) + [k for k in mini if k not in real]:
            out += differences(
                real.get(key, "<absent>"),
                mini.get(key, "<absent>"),
                f"{path}.{key}" if path else key,
            )
        return out
    if isinstance(real, list) and isinstance(mini, list) and len(real) == len(mini):
        out = []
        for i, (r, m) in enumerate(zip(real, mini)):
            out += differences(r, m, f"{path}[{i}]")
        return out
    return [] if real == mini else [(path, real, mini)]


def raw_request(
    address: str,
    api_key: int,
    version: int,
    body: bytes = b"",
    timeout: float = 10,
    flexible: bool = False,
) -> bytes | str:
    """Send one hand-made request (any version, even one no schema knows; ``flexible``: header
    v2, with its empty tag section): the response after its correlation id, or CLOSED."""
    host, port = address.rsplit(":", 1)
    client = b"differential"
    frame = (
        struct.pack(">hhih", api_key, version, 7, len(client))
        + client
        + (b"\x00" if flexible else b"")
        + body
    )
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        data = b""
        try:
            while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
                chunk = sock.recv(65536)
                if not chunk:
                    return CLOSED
                data += chunk
        except OSError:
            return CLOSED
    return data[8:]


@dataclass
class Twin:
    """A real Kafka broker and a mini-broker side by side; differences kept per case."""

    real_address: str
    mini_address: str
    major: int = 4
    found: dict[str, list[tuple[str, Any, Any]]] = field(default_factory=dict)
    case: str = ""
    #: the last request's raw answers, by side ("real", "mini")
    last: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.real = self._connect(self.real_address)
        self.mini = self._connect(self.mini_address)

    @staticmethod
    def _connect(address: str) -> BrokerConnection:
        host, port = address.rsplit(":", 1)
        return BrokerConnection(host, int(port), request_timeout_ms=20000).connect()

    def close(self) -> None:
        self.real.close()
        self.mini.close()

    def supports(self, api: Api[Any, Any], version: int) -> bool:
        """Whether the real broker serves ``version`` of ``api``: its ApiVersions range, less
        what Kafka 4.x removed (KIP-896) but still advertises (Produce v0-v2, for librdkafka)."""
        lo, hi = self.real.versions.get(api.key, (1, 0))
        if self.major >= 4:
            lo = max(lo, KAFKA4_MIN.get(api.key, 0))
        return lo <= version <= hi

    def _ask(self, side: str, api: Api[Any, Any], body: Any, version: int) -> Any:
        conn = getattr(self, side)
        try:
            return conn.request(api, body, version)
        except KafkaConnectionError:
            setattr(self, side, self._connect(getattr(self, side + "_address")))
            return CLOSED

    def request(
        self,
        api: Api[Any, Any],
        version: int,
        body: Any,
        label: str = "",
        order_by: dict[str, str] | None = None,
        view: Callable[[Any], Any] | None = None,
    ) -> tuple[Any, Any]:
        """Send to both; record the differences under the case; both normalised responses.
        ``order_by`` {list field: key} sorts lists whose order Kafka leaves to a hash map;
        ``view`` narrows both responses to the part this case is about.  A callable ``body``
        is called with "real" or "mini" for each side's body (ids that differ by nature, such
        as a producer id, then go to the broker that handed them out)."""
        bodies = {side: body(side) if callable(body) else body for side in ("real", "mini")}
        self.last = {side: self._ask(side, api, bodies[side], version) for side in ("real", "mini")}
        real = _ordered(normalise(self.last["real"]), order_by or {})
        mini = _ordered(normalise(self.last["mini"]), order_by or {})
        if view is not None:
            real, mini = view(real), view(mini)
        where = f"{api.name} v{version}" + (f" {label}" if label else "")
        for path, r, m in differences(real, mini):
            self.found.setdefault(self.case, []).append((f"{where}: {path}", r, m))
        return real, mini

    def raw(
        self, api_key: int, version: int, label: str = "", body: bytes = b"", flexible: bool = False
    ) -> tuple[Any, Any]:
        """A hand-made request (see :func:`raw_request`) to both: whether each answered, and
        for ApiVersions the error code."""

        def summary(answer: bytes | str) -> Any:
            if answer == CLOSED:
                return CLOSED
            code = struct.unpack(">h", answer[:2])[0] if api_key == 18 else None
            return ("answered", code)

        real = summary(raw_request(self.real_address, api_key, version, body, flexible=flexible))
        mini = summary(raw_request(self.mini_address, api_key, version, body, flexible=flexible))
        if real != mini:
            self.found.setdefault(self.case, []).append(
                (f"key {api_key} v{version} {label}".strip(), real, mini)
            )
        return real, mini
