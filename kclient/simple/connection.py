"""A broker connection for the fetch path: each response frame is read straight into one buffer.

It offers the calls of :class:`kclient.connection.BrokerConnection` that readers need
(``connect``, ``send``, ``receive``, ``request``, ``version``, ``versions``, ``close``) and
negotiates versions the same way (ApiVersions, or the ranges of ``broker_version_fallback`` when
``api_version_request`` is false or the broker closes on ApiVersions).  What differs is the
receive path: the 4-byte size is read first, then the whole frame lands by ``recv_into`` in a
buffer of exactly that size, and the frame is decoded in place (the records field stays a view
of it).  For megabyte Fetch responses that is one copy out of the kernel instead of the several
a generic accumulate-and-split framer makes, which is what bounds large-record throughput.
"""
from __future__ import annotations

import logging
import socket
import struct
import threading
from typing import Any, Dict, Optional, Tuple

from kclient.errors import KafkaConnectionError, KafkaTimeoutError, UnsupportedVersionError
from kclient.protocol.apis import API_VERSIONS, APIS
from kclient.protocol.errors import KafkaError
from kclient.protocol.framing import DEFAULT_MAX_FRAME, ClientProtocol
from kclient.protocol.schema import Api, Struct
from kclient.protocol.versions import fallback_versions, pick_version

__all__ = ["FetchConnection"]

log = logging.getLogger(__name__)
_SIZE = struct.Struct(">i")


class FetchConnection:
    """One TCP connection to a broker; requests may be pipelined, one reader at a time."""

    def __init__(self, host: str, port: int, *, node_id: Optional[int] = None,
                 client_id: str = "kclient", connect_timeout_ms: int = 10000,
                 request_timeout_ms: int = 30000, api_version_request: bool = True,
                 broker_version_fallback: str = "0.9.0", max_frame: int = DEFAULT_MAX_FRAME,
                 send_buffer_bytes: Optional[int] = None,
                 receive_buffer_bytes: Optional[int] = None) -> None:
        self.host, self.port, self.node_id = host, int(port), node_id
        self.client_id = client_id
        self.connect_timeout = connect_timeout_ms / 1000.0
        self.request_timeout = request_timeout_ms / 1000.0
        self.api_version_request = api_version_request
        self.broker_version_fallback = broker_version_fallback
        self.max_frame = max_frame
        self._bufsizes = (send_buffer_bytes, receive_buffer_bytes)
        self.versions: Dict[int, Tuple[int, int]] = {}
        self._sock: Optional[socket.socket] = None
        self._protocol = ClientProtocol(client_id, max_frame)
        self._responses: Dict[int, Struct] = {}
        self._send_lock = threading.Lock()
        self._recv_lock = threading.Lock()
        self._closed_reason: Optional[str] = None
        self._head = bytearray(4)

    def __repr__(self) -> str:
        return f"FetchConnection({self.host}:{self.port})"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def connected(self) -> bool:
        return self._sock is not None

    @property
    def in_flight(self) -> int:
        return self._protocol.in_flight

    def __enter__(self) -> "FetchConnection":
        return self if self.connected else self.connect()

    def __exit__(self, *exc) -> None:
        self.close()

    # -- lifecycle ---------------------------------------------------------------------------
    def connect(self) -> "FetchConnection":
        """Open the socket and settle the API versions; raises KafkaConnectionError."""
        self._open()
        if not self.api_version_request:
            self.versions = dict(fallback_versions(self.broker_version_fallback))
            return self
        try:
            self.versions = self._negotiate()
        except KafkaConnectionError:
            log.info("%s closed on ApiVersions; assuming broker %s", self.address,
                     self.broker_version_fallback)
            self._open()
            self.versions = dict(fallback_versions(self.broker_version_fallback))
        return self

    def _open(self) -> None:
        self.close()
        try:
            sock = socket.create_connection((self.host, self.port), timeout=self.connect_timeout)
        except OSError as exc:
            raise KafkaConnectionError(self.host, self.port, f"cannot connect: {exc}") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        snd, rcv = self._bufsizes
        if snd:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, snd)
        if rcv:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcv)
        sock.settimeout(self.request_timeout)
        self._sock = sock
        self._protocol = ClientProtocol(self.client_id, self.max_frame)
        self._responses.clear()
        self._closed_reason = None

    def _negotiate(self) -> Dict[int, Tuple[int, int]]:
        version = API_VERSIONS.max_version
        for _ in range(2):
            body = {"client_software_name": "kclient", "client_software_version": "0.1.0"}
            resp = self.request(API_VERSIONS, body, version)
            ranges = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
            if resp.error_code == 0:
                return ranges
            if resp.error_code == UnsupportedVersionError.errno and API_VERSIONS.key in ranges:
                version = min(ranges[API_VERSIONS.key][1], version - 1)
                continue
            raise KafkaConnectionError(self.host, self.port,
                                       f"ApiVersions failed with error {resp.error_code}")
        raise KafkaConnectionError(self.host, self.port, "every ApiVersions version was rejected")

    def close(self, reason: str = "closed by the client") -> None:
        """Close the socket; requests still waiting fail with ``reason``."""
        sock, self._sock = self._sock, None
        if sock is not None:
            self._closed_reason = reason
            try:
                sock.close()
            except OSError:
                pass

    # -- requests ----------------------------------------------------------------------------
    def version(self, api: Api, highest: Optional[int] = None) -> int:
        """The version used for ``api``: the highest both sides support (capped by ``highest``)."""
        return pick_version(api, self.versions, highest)

    def supports(self, api_key: int) -> bool:
        return api_key in self.versions and api_key in APIS

    def send(self, api: Api, body: Any, version: Optional[int] = None,
             expect_response: bool = True) -> int:
        """Write one request; returns its correlation id."""
        if version is None:
            version = self.version(api)
        with self._send_lock:
            sock = self._require_socket()
            corr, frame = self._protocol.send_request(api, version, body, expect_response)
            try:
                sock.sendall(frame)
            except OSError as exc:
                self._fail(f"send failed: {exc}")
        return corr

    def receive(self, corr: int) -> Struct:
        """Block until the response to ``corr`` arrived; earlier responses are kept for theirs."""
        with self._recv_lock:
            responses = self._responses
            while corr not in responses:
                rcorr, resp = self._read_frame(corr)
                responses[rcorr] = resp
            return responses.pop(corr)

    def request(self, api: Api, body: Any, version: Optional[int] = None) -> Struct:
        return self.receive(self.send(api, body, version))

    # -- the receive path --------------------------------------------------------------------
    def _read_frame(self, corr: int) -> Tuple[int, Struct]:
        sock = self._require_socket()
        head = self._head
        self._fill(sock, memoryview(head), corr)
        n = _SIZE.unpack(head)[0]
        if n < 4 or n > self.max_frame:
            self._fail(f"bad response: frame size {n} is outside 4..{self.max_frame}")
        frame = bytearray(n)
        self._fill(sock, memoryview(frame), corr)
        try:
            return self._protocol.decode_frame(frame)
        except KafkaError as exc:
            self._fail(f"bad response: {exc}")

    def _fill(self, sock: socket.socket, view: memoryview, corr: int) -> None:
        got, n = 0, len(view)
        recv_into = sock.recv_into
        try:
            while got < n:
                k = recv_into(view[got:], n - got)
                if not k:
                    self._fail(f"closed by the broker ({self._protocol.in_flight} requests "
                               "in flight)")
                got += k
        except socket.timeout:
            self._fail(f"no response within {self.request_timeout:.1f}s "
                       f"(correlation id {corr})", timeout=True)
        except OSError as exc:
            self._fail(f"receive failed: {exc}")

    def _require_socket(self) -> socket.socket:
        sock = self._sock
        if sock is None:
            raise KafkaConnectionError(self.host, self.port,
                                       self._closed_reason or "not connected")
        return sock

    def _fail(self, reason: str, timeout: bool = False):
        self.close(reason)
        if timeout:
            raise KafkaTimeoutError(f"{self.address}: {reason}")
        raise KafkaConnectionError(self.host, self.port, reason)
