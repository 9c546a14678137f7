"""A blocking connection to one broker that drives the sans-IO protocol over a socket.

It negotiates API versions on connect (ApiVersions, or an assumed old release when
``api.version.request`` is false), keeps several requests in flight, and turns timeouts and
disconnects into clear errors that fail every request still waiting.

``request_timeout_ms`` bounds a whole response, not each socket read: :meth:`receive` sets one
deadline when it starts waiting and every partial read gets only what is left of it, so a broker
that trickles a response byte by byte (or lies about its length) cannot hold the caller longer.

:meth:`BrokerConnection.close` may come from any thread and always wakes a thread waiting on the
socket: it shuts the socket down (a blocked ``recv``/``sendall`` returns at once) but releases the
file descriptor only when no thread is inside a socket call any more.  Closing the descriptor
under a reader let the kernel hand its number to the next socket opened, and a reader that had
taken the number but not yet entered ``poll`` then waited on that stranger's socket for the whole
request timeout.  A close that lands while :meth:`connect` is opening the socket cancels that
connect instead of being lost.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar, cast

from ._version import __version__
from .core.handshake import HandshakeConfig, api_versions, authenticate, reauth_due
from .errors import (
    AuthenticationError,
    KafkaConnectionError,
    KafkaTimeoutError,
    SecurityProtocolError,
    SslAuthenticationError,
)
from .io.driver import ConnectionTransport, run
from .metrics import ConnectionStats
from .protocol.errors import KafkaError
from .protocol.framing import DEFAULT_MAX_FRAME, ClientProtocol, Reader
from .protocol.schema import Api, Struct
from .protocol.speedups import load_speedup
from .protocol.versions import DEFAULT_BROKER_VERSION_FALLBACK, pick_version
from .security import SecuritySettings
from .security.tls import looks_like_tls

__all__ = ["BrokerConnection", "ConnectionSettings"]

log = logging.getLogger(__name__)
_SIZE = struct.Struct(">i")
_SIZE_CORR = struct.Struct(">ii")
#: why ``_sock.read_answer`` stopped short: the deadline, a socket error, a signal (2: the
#: stream ended, which _stop_cause gives as None)
_TIMED_OUT, _FAILED, _SIGNALLED = 1, 3, 4
#: how much one recv may read ahead of a response's size prefix
_READ_AHEAD = 64 * 1024
#: the socket calls in C (kclient/io/_sock.pyx: the frame reader with the GIL released, the
#: small send that keeps it), when built
_sock = load_speedup("kclient.io._sock")
#: a bytearray for a frame, not zeroed first when the C reader is built (a read fills it)
_frame_buffer: Callable[[int], bytearray] = bytearray if _sock is None else _sock.frame_buffer
#: a request up to this size is written with the GIL held (_sock.send_small): a send of it is
#: shorter than handing the GIL to another thread and waiting for it back
SMALL_SEND_BYTES = 16 * 1024
#: a socket timeout this close to the one wanted is kept (seconds; see _set_timeout)
_TIMEOUT_SLACK = 0.05
_Req = TypeVar("_Req")
_Resp = TypeVar("_Resp")


@dataclass(frozen=True)
class ConnectionSettings:
    """What every broker connection of one client shares, resolved once from its config.

    Built by :meth:`from_config` (producer, consumer connector) or from a SimpleConsumer's
    arguments, then handed down to every :class:`BrokerConnection` that client opens.
    """

    client_id: str = "kclient"
    connect_timeout_ms: int = 10000
    request_timeout_ms: int = 30000
    api_version_request: bool = True
    broker_version_fallback: str = DEFAULT_BROKER_VERSION_FALLBACK
    max_frame: int = DEFAULT_MAX_FRAME
    send_buffer_bytes: int | None = None
    receive_buffer_bytes: int | None = None
    security: SecuritySettings = SecuritySettings()
    #: KIP-899 / KIP-1102: go back to the bootstrap list when no known broker gives metadata
    metadata_recovery_strategy: str = "rebootstrap"
    metadata_recovery_rebootstrap_trigger_ms: int = 300000
    #: the client's :class:`~kclient.metrics.ClientMetrics`: each connection registers its stats
    metrics: Any = dataclasses.field(default=None, compare=False)

    @classmethod
    def from_config(cls, config: Mapping[str, Any], **overrides: Any) -> ConnectionSettings:
        """The settings a loaded producer or consumer config names (``overrides`` win)."""
        settings = cls(
            client_id=config["client.id"] or "kclient",
            connect_timeout_ms=config["connect.timeout.ms"],
            request_timeout_ms=config["socket.timeout.ms"],
            api_version_request=config["api.version.request"],
            broker_version_fallback=str(config["broker.version.fallback"]),
            send_buffer_bytes=config["socket.send.buffer.bytes"],
            receive_buffer_bytes=config["socket.receive.buffer.bytes"],
            security=SecuritySettings.from_config(config),
            metadata_recovery_strategy=config.get("metadata.recovery.strategy", "rebootstrap"),
            metadata_recovery_rebootstrap_trigger_ms=config.get(
                "metadata.recovery.rebootstrap.trigger.ms", 300000
            ),
        )
        return settings.replace(**overrides) if overrides else settings

    def replace(self, **changes: Any) -> ConnectionSettings:
        """A copy with ``changes`` (field names) applied."""
        return dataclasses.replace(self, **changes)

    def connection_stats(self, host: str, port: int, node_id: int | None) -> ConnectionStats:
        """The stats of a new connection to host:port, registered with the client's metrics."""
        stats = ConnectionStats(f"{host}:{port}", node_id)
        if self.metrics is not None:
            self.metrics.register(stats)
        return stats

    def handshake(self, host: str, port: int) -> HandshakeConfig:
        """What the core's handshake conversations need to open a connection to host:port."""
        return HandshakeConfig(
            host,
            port,
            __version__,
            self.api_version_request,
            self.broker_version_fallback,
            self.security.sasl,
        )


_DEFAULT_SETTINGS = ConnectionSettings()


class BrokerConnection:
    """One TCP connection to a broker; thread-safe for concurrent send and receive.

    ``settings`` is shared by every connection of a client; keyword ``overrides`` (field names
    of :class:`ConnectionSettings`) adjust it for this connection alone.
    """

    def __init__(
        self,
        host: str,
        port: int,
        settings: ConnectionSettings | None = None,
        *,
        node_id: int | None = None,
        **overrides: Any,
    ):
        settings = settings or _DEFAULT_SETTINGS
        if overrides:
            settings = settings.replace(**overrides)
        self.settings = settings
        self.host, self.port, self.node_id = host, int(port), node_id
        self.client_id = settings.client_id
        self.connect_timeout = settings.connect_timeout_ms / 1000.0
        self.request_timeout = settings.request_timeout_ms / 1000.0
        self.api_version_request = settings.api_version_request
        self.broker_version_fallback = settings.broker_version_fallback
        self.max_frame = settings.max_frame
        self._handshake = settings.handshake(self.host, self.port)
        self._bufsizes = (settings.send_buffer_bytes, settings.receive_buffer_bytes)
        self.versions: dict[int, tuple[int, int]] = {}
        self._sock: socket.socket | None = None
        #: guards _sock, _users and _closes: close() may come from any thread
        self._state = threading.Lock()
        #: threads inside a call on each socket; close() leaves the descriptor to the last one
        self._users: dict[socket.socket, int] = {}
        #: count of close() calls: a connect() that sees it change was cancelled
        self._closes = 0
        self._protocol = ClientProtocol(self.client_id, self.max_frame)
        self._responses: dict[int, Struct] = {}
        self._send_lock = threading.Lock()
        self._recv_lock = threading.Lock()
        self._closed_reason: str | None = None
        #: set by :meth:`shut`: the connection never opens again, and says why
        self._shut: str | None = None
        self._head = bytearray(4)
        #: bytes read ahead of the response being read: ``_rbuf[_rstart:_rend]`` (one recv
        #: takes a small response whole, size prefix and all)
        self._rbuf = bytearray(_READ_AHEAD)
        self._rstart = self._rend = 0
        #: the next answer being read on a helper thread (:meth:`read_behind`)
        self._behind: _Behind | None = None
        #: the C send of a small request with the GIL held, on a plain TCP connection
        self._send_small = None if _sock is None or settings.security.uses_tls else _sock.send_small
        #: an answer waited for and read whole in C, the GIL let go (_whole; plain sockets)
        self._read_answer = None if _sock is None else _sock.read_answer
        self._reauth_at: float | None = None  # monotonic time to re-authenticate (SASL)
        self._auth_failure: tuple[float, KafkaConnectionError] | None = None
        #: this connection's traffic (kclient.metrics): requests, bytes, round trips, state
        self.stats = settings.connection_stats(self.host, self.port, node_id)

    def __repr__(self) -> str:
        return f"BrokerConnection({self.host}:{self.port}, node={self.node_id})"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def connected(self) -> bool:
        return self._sock is not None

    def __enter__(self) -> BrokerConnection:
        return self.connect() if not self.connected else self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- lifecycle ---------------------------------------------------------------------------
    def connect(self) -> BrokerConnection:
        """Open the socket (TLS if configured), negotiate API versions, authenticate (SASL if
        configured); raises KafkaConnectionError (AuthenticationError: not retriable, and
        raised again without a new attempt for ``reconnect.backoff.max.ms``)."""
        failed = self._auth_failure
        if failed is not None and time.monotonic() < failed[0]:
            raise failed[1]
        if self._shut is not None:
            raise KafkaConnectionError(self.host, self.port, self._shut)
        closes = self._closes
        self._reauth_at = None  # a new session: the last one's schedule is void
        self._open(closes)
        negotiated = run(api_versions(self._handshake), ConnectionTransport(self))
        while negotiated.reopen:  # closed on ApiVersions: going away, or before 0.10
            self._open(closes)
            if negotiated.follow_up is None:
                break
            negotiated = run(negotiated.follow_up, ConnectionTransport(self))
        self.versions = negotiated.versions
        self._authenticate()
        self.stats.connects += 1
        self.stats.state = "UP"
        return self

    def _authenticate(self) -> None:
        """The SASL exchange; its session lifetime schedules re-authentication (KIP-368)."""
        sasl = self.settings.security.sasl
        if sasl is None:
            return
        self._reauth_at = None
        try:
            lifetime = run(authenticate(self._handshake, self.versions), ConnectionTransport(self))
        except KafkaConnectionError as exc:
            if isinstance(exc, AuthenticationError):
                backoff = self.settings.security.auth_backoff_ms / 1000.0
                self._auth_failure = (time.monotonic() + backoff, exc)
            self._drop(f"authentication failed: {exc}")
            raise
        self._auth_failure = None
        self._reauth_at = reauth_due(lifetime, time.monotonic())

    def raw_exchange(self, token: bytes) -> bytes:
        """One bare size-prefixed SASL token each way (SaslHandshake v0's exchange)."""
        sock = self._enter()
        try:
            try:
                sock.sendall(_SIZE.pack(len(token)) + token)
            except OSError as exc:
                self._fail(f"send failed: {exc}", cause=exc, closed_by_peer=True)
            deadline = time.monotonic() + self.request_timeout
            self._fill(sock, memoryview(self._head), -1, deadline)
            n = _SIZE.unpack(self._head)[0]
            if n < 0 or n > self.max_frame:
                self._fail(f"bad SASL token: size {n}")
            answer = bytearray(n)
            self._fill(sock, memoryview(answer), -1, deadline)
            return bytes(answer)
        finally:
            self._leave(sock)

    def _open(self, closes: int) -> None:
        """Open a new socket; a :meth:`close` since ``closes`` was counted cancels it."""
        self._drop("reconnecting")
        try:
            sock = socket.create_connection((self.host, self.port), timeout=self.connect_timeout)
        except OSError as exc:
            self.stats.errors += 1
            self.stats.state = "DOWN"
            why = (
                f"no answer within {self.connect_timeout:.1f}s (connect.timeout.ms)"
                if isinstance(exc, TimeoutError)
                else str(exc)
            )
            raise KafkaConnectionError(self.host, self.port, why) from exc
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        snd, rcv = self._bufsizes
        if snd:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, snd)
        if rcv:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcv)
        try:  # TLS, within the connect timeout
            sock = self.settings.security.secure(sock, self.host, self.port)
        except OSError as exc:
            sock.close()
            raise KafkaConnectionError(
                self.host, self.port, f"TLS handshake failed: {exc!r}"
            ) from exc
        sock.settimeout(self.request_timeout)
        with self._state:
            cancelled = self._closes != closes or self._shut is not None
            if not cancelled:
                self._sock = sock
                self._protocol = ClientProtocol(self.client_id, self.max_frame)
                self._responses.clear()
                self._rstart = self._rend = 0
                self._closed_reason = None
        if cancelled:  # close() came while we connected: it wins
            sock.close()
            raise KafkaConnectionError(
                self.host, self.port, f"closed while connecting: {self._closed_reason}"
            )

    def close(self, reason: str = "closed by the client") -> None:
        """Close the connection from any thread: requests still waiting fail with ``reason``
        at once, and a :meth:`connect` under way fails instead of opening a socket."""
        with self._state:
            self._closes += 1
            if self._sock is None:
                self._closed_reason = reason
        self._drop(reason)

    def shut(self, reason: str) -> None:
        """Close for good, from any thread: as :meth:`close`, and every later or concurrent
        :meth:`connect` fails with ``reason`` (its owner is stopping, nothing may reopen it)."""
        with self._state:
            self._shut = reason
        self.close(reason)

    def _drop(self, reason: str) -> None:
        """Shut the socket down (waking whoever waits on it); its descriptor is released now
        if no thread is inside a call on it, else by the last one to leave (:meth:`_leave`)."""
        with self._state:
            sock, self._sock = self._sock, None
            if sock is None:
                return
            self._closed_reason = reason
            busy = sock in self._users
            self._behind = None  # (its thread ends as the shutdown below wakes it)
        if self.stats.state == "UP":
            self.stats.disconnects += 1
        self.stats.state = "DOWN"
        try:  # a blocked recv or sendall returns now, and every later call fails
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        if not busy:
            _release(sock)

    def _enter(self) -> socket.socket:
        """The socket, counted as in use until :meth:`_leave` (so close keeps its descriptor)."""
        with self._state:
            sock = self._sock
            if sock is None:
                raise KafkaConnectionError(
                    self.host, self.port, self._closed_reason or "not connected"
                )
            self._users[sock] = self._users.get(sock, 0) + 1
        return sock

    def _leave(self, sock: socket.socket) -> None:
        """Done with ``sock``; the last thread out of a closed socket releases it."""
        with self._state:
            left = self._users[sock] - 1
            if left:
                self._users[sock] = left
                return
            del self._users[sock]
            closed = sock is not self._sock
        if closed:
            _release(sock)

    # -- requests ----------------------------------------------------------------------------
    def version(self, api: Api[Any, Any], highest: int | None = None) -> int:
        """The version this connection uses for ``api``: the highest both sides support."""
        return pick_version(api, self.versions, highest)

    def send(
        self,
        api: Api[_Req, Any],
        body: _Req | Mapping[str, Any],
        version: int | None = None,
        expect_response: bool = True,
        reader: Reader | None = None,
    ) -> int:
        """Write one request; returns its correlation id (wait for it with :meth:`receive`);
        ``reader``: a hot path's decoder of the answer, tried before the generic one."""
        if self._reauth_at is not None:
            self._reauth_if_due()
        if version is None:
            version = self.version(api)
        with self._send_lock:
            sock = self._enter()
            try:
                corr, frame = self._protocol.send_request(
                    api, version, body, expect_response, reader
                )
                self._write(sock, api, frame, corr, expect_response)
            finally:
                self._leave(sock)
        return corr

    def send_framed(
        self,
        api: Api[Any, Any],
        version: int,
        frame_for: Callable[[int], bytes | bytearray],
        reader: Reader | None,
        expect_response: bool = True,
    ) -> int:
        """Write a request the caller frames (``frame_for(correlation id)``: the whole frame, a
        hot path's prepared encoder); :meth:`receive` gives ``reader``'s answer, or the generic
        decoding when it returns None (see :meth:`ClientProtocol.reserve`)."""
        if self._reauth_at is not None:
            self._reauth_if_due()
        with self._send_lock:
            sock = self._enter()
            try:
                corr = self._protocol.reserve(api, version, expect_response, reader)
                self._write(sock, api, frame_for(corr), corr, expect_response)
            finally:
                self._leave(sock)
        return corr

    def exchange(
        self,
        api: Api[Any, Any],
        version: int,
        frame_for: Callable[[int], bytes | bytearray],
        reader: Reader | None,
    ) -> Any:
        """:meth:`send_framed` then :meth:`receive` (the sync producer's round trip), in one
        pass when no other thread is reading this connection: the socket taken once and the
        receive lock held from the write to the answer."""
        recv_lock = self._recv_lock
        if (
            self._reauth_at is not None
            or self._responses
            or self._behind is not None
            or not recv_lock.acquire(False)
        ):
            return self.receive(self.send_framed(api, version, frame_for, reader))
        try:
            sock = self._enter()
            try:
                with self._send_lock:
                    corr = self._protocol.reserve(api, version, True, reader)
                    self._write(sock, api, frame_for(corr), corr, True)
                return self._await(sock, corr)
            finally:
                self._leave(sock)
        finally:
            recv_lock.release()

    def round_trip(self, api: Api[Any, Any], version: int, frame: bytearray, reader: Reader) -> Any:
        """:meth:`exchange` of a prepared ``frame`` (the sync producer's lane), its correlation
        id written here at bytes 8-11.  With no other thread reading and nothing read ahead on
        this connection, an answer that comes whole in one recv and that ``reader`` takes is
        read without the generic framing: the fewest steps per round trip.  Anything else
        (another answer first, a split or different answer, an error) continues as
        :meth:`exchange` does."""
        recv_lock = self._recv_lock
        if (  # (another request in flight is fine: its answer first sends us to _await)
            self._reauth_at is not None
            or self._responses
            or self._rend != self._rstart
            or self._behind is not None
            or not recv_lock.acquire(False)
        ):
            return self.exchange(api, version, lambda corr: _with_corr(frame, corr), reader)
        try:
            sock = self._enter()
            try:
                with self._send_lock:
                    corr = self._protocol.reserve(api, version, True, reader)
                    _SIZE.pack_into(frame, 8, corr)
                    self._write(sock, api, frame, corr, True)
                answer = self._whole(sock, corr, False)
                return answer if answer is not None else self._await(sock, corr)
            finally:
                self._leave(sock)
        finally:
            recv_lock.release()

    def _whole(
        self, sock: socket.socket, corr: int, keep: bool = True, deadline: float = 0.0
    ) -> Any:
        """The answer to ``corr`` read without the generic framing when nothing is read ahead:
        recv into the read-ahead buffer until its frame is whole (on a plain socket in one C
        call, ``_sock.read_answer``, the GIL let go), then its reader (see
        :meth:`ClientProtocol.take`); ``keep``: the frame is copied out first (a reader's
        answer may keep views of it, as a Fetch answer's records).  None (what was read left
        in the read-ahead buffer for :meth:`_await`) for any other answer: another request's
        first, one larger than the buffer, no reader or one that declines.  The caller holds
        the receive lock and ``sock``, whose timeout is what is left until ``deadline`` (0:
        request.timeout.ms since ``_write``, which set it)."""
        buf = self._rbuf
        self._rstart = 0
        deadline = deadline or time.monotonic() + self.request_timeout
        try:
            k = 0
            if self._read_answer is not None and type(sock) is socket.socket:  # (not TLS)
                k, why, err = self._read_answer(sock.fileno(), buf, deadline)
                if not k and why != _SIGNALLED:  # (a signal: Python's recv runs its handler)
                    self._recv_failed(_stop_cause(why, err), corr, (0, 4, "size prefix"))
            if not k:
                k = sock.recv_into(buf, len(buf))
        except OSError as exc:
            self._recv_failed(exc, corr, (0, 4, "size prefix"))
        except BaseException as exc:  # KeyboardInterrupt: the answer is lost
            self._torn(exc)
            raise
        if not k:
            self._recv_failed(None, corr, (0, 4, "size prefix"))
        self._rend = k
        if k < 8:
            return None
        n, rcorr = _SIZE_CORR.unpack_from(buf, 0)
        end = n + 4
        if rcorr != corr or n < 4 or end > len(buf):
            return None
        if k < end:  # the rest of the frame, within one deadline (as _await reads it)
            view = memoryview(buf)  # (after read_answer: where it stopped short, the cause)
            try:
                while k < end:
                    k += self._recv_some(sock, view[k:], corr, deadline, (k - 4, n, "frame"))
                    self._rend = k
            except BaseException as exc:
                self._torn(exc)
                raise
        frame = memoryview(buf[4:end]) if keep else memoryview(buf)[4:end]
        answer = self._protocol.take(corr, frame)
        if answer is None:
            return None
        self._rstart = end if k > end else 0
        if k == end:
            self._rend = 0
        st = self.stats
        st.responses += 1
        st.bytes_in += end
        st.answered(corr)
        return answer

    def _reauth_if_due(self) -> None:
        """KIP-368: authenticate again before the broker's session runs out."""
        at = self._reauth_at
        if at is not None and time.monotonic() >= at and not self.in_flight:
            self._authenticate()

    def _write(
        self,
        sock: socket.socket,
        api: Api[Any, Any],
        frame: bytes | bytearray,
        corr: int,
        expect_response: bool,
    ) -> None:
        """Write one whole frame (the caller holds the send lock and ``sock``)."""
        try:
            now = sock.gettimeout()  # a receive may have left less (_set_timeout, inline)
            if now is None or abs(now - self.request_timeout) > _TIMEOUT_SLACK:
                sock.settimeout(self.request_timeout)
            if self._send_small is not None and len(frame) <= SMALL_SEND_BYTES:
                sent = self._send_small(sock.fileno(), frame)
                if sent < len(frame):  # the socket's buffer is full: wait as usual
                    sock.sendall(memoryview(frame)[sent:])
            else:
                sock.sendall(frame)
            st = self.stats
            st.requests += 1
            st.by_api[api.name] += 1
            st.bytes_out += len(frame)
            if expect_response:
                st.sent_at[corr] = (time.monotonic(), api.name)
        except ssl.SSLError as exc:  # the broker's alert, if it sent one, says why
            self._tls_failed(_pending_alert(sock) or exc)
        except OSError as exc:
            if self._sock is None:  # closed by another thread of ours
                self._fail(self._closed_reason or "closed by the client", cause=exc)
            self._fail(f"send failed: {exc}", timeout=isinstance(exc, TimeoutError), cause=exc)
        except BaseException as exc:  # KeyboardInterrupt mid-frame: the stream is torn
            self._drop(f"interrupted while sending: {type(exc).__name__}")
            raise

    def receive(self, corr: int) -> Struct:
        """Block until the response to ``corr`` arrives; earlier ones are kept for their waiters.

        A :class:`Struct` fits the typed view of its response (``resp: FetchResponse = ...``)."""
        with self._recv_lock:
            responses = self._responses
            if corr in responses:
                return responses.pop(corr)
            sock = self._enter()
            try:
                answer: Struct | None = None
                if self._behind is not None:
                    answer = self._settle(sock, corr)
                elif not responses and self._rend == self._rstart and self._reauth_at is None:
                    deadline = time.monotonic() + self.request_timeout
                    _set_timeout(sock, self.request_timeout)
                    answer = self._whole(sock, corr, True, deadline)
                if answer is not None:
                    return answer
                return self._await(sock, corr)
            finally:
                self._leave(sock)

    def _await(self, sock: socket.socket, corr: int) -> Struct:
        """Read responses until ``corr``'s, keeping the others for their waiters (the caller
        holds the receive lock and ``sock``)."""
        deadline = time.monotonic() + self.request_timeout
        responses = self._responses
        try:
            while True:
                rcorr, resp = self._read_frame(sock, corr, deadline)
                if rcorr == corr:
                    return resp
                responses[rcorr] = resp
        except BaseException as exc:
            self._torn(exc)
            raise

    def read_behind(self, capacity: int) -> bool:
        """Start reading the next answer on a helper thread (one whose frame is at most
        ``capacity`` bytes goes whole into one buffer) while the caller works, so the kernel's
        copy of a large answer runs beside it; :meth:`receive` takes it from there.  Only on a
        plain TCP connection with the C reader built, no answer already read ahead or waiting
        and no other thread reading: False (and nothing started) otherwise."""
        if (
            _sock is None
            or self._behind is not None
            or self._reauth_at is not None
            or self._responses
            or self._rend != self._rstart
            or self.settings.security.uses_tls
            or not self._recv_lock.acquire(False)
        ):
            return False
        try:
            sock = self._enter()
            behind = _Behind(self, sock, capacity)
            self._behind = behind
            behind.thread.start()
            return True
        finally:
            self._recv_lock.release()

    def _settle(self, sock: socket.socket, corr: int) -> Struct | None:
        """Take over from the helper reading behind: wait for it, read the rest of its frame
        (or put what it read of a size prefix back in the read-ahead buffer) and decode it.
        The answer when it is ``corr``'s, else None (kept for its waiter); the caller holds
        the receive lock and ``sock``, and the stream continues as if read here."""
        behind, self._behind = self._behind, None
        if behind is None:  # a close from another thread took it: reading on fails as closed
            return None
        behind.thread.join()
        head, frame = behind.head, behind.frame
        got, filled = behind.result
        if not filled:  # no frame begun (a short read, or too large for the buffer)
            self._rbuf[:got] = head[:got]
            self._rstart, self._rend = 0, got
            return None
        n: int = _SIZE.unpack_from(head, 0)[0]
        del frame[n:]
        try:
            if filled < n:
                deadline = time.monotonic() + self.request_timeout
                self._fill(sock, memoryview(frame)[filled:], corr, deadline)
        except BaseException as exc:
            self._torn(exc)
            raise
        rcorr, resp = self._decoded(frame, n)
        if rcorr == corr:
            return resp
        self._responses[rcorr] = resp
        return None

    def _torn(self, exc: BaseException) -> None:
        """A read stopped mid-frame by anything but the connection's own error (a
        KeyboardInterrupt, ...) leaves the stream torn: drop the connection."""
        if not isinstance(exc, KafkaError):
            self._drop(f"interrupted while reading: {type(exc).__name__}")

    def request(
        self, api: Api[_Req, _Resp], body: _Req | Mapping[str, Any], version: int | None = None
    ) -> _Resp:
        """Send a request and wait for its response (typed as ``api``'s response view)."""
        return cast(_Resp, self.receive(self.send(api, body, version)))

    def _read_frame(self, sock: socket.socket, corr: int, deadline: float) -> tuple[int, Struct]:
        """Read one response: its 4-byte size, then the whole frame by ``recv_into`` into one
        buffer of exactly that size, decoded in place (Records fields stay views of it) - one
        copy out of the kernel for megabyte Fetch responses."""
        n = self._read_size(sock, corr, deadline)
        if n < 4 or n > self.max_frame:
            if looks_like_tls(_SIZE.pack(n)) and not self.settings.security.uses_tls:
                self._drop("the broker answered in TLS")
                raise SecurityProtocolError(
                    self.host,
                    self.port,
                    "the broker answered in TLS: this is an SSL or "
                    "SASL_SSL listener, but security.protocol is "
                    f"{self.settings.security.protocol}",
                )
            self._fail(f"bad response: frame size {n} is outside 4..{self.max_frame}")
        return self._decoded(self._frame(sock, n, corr, deadline), n)

    def _decoded(self, frame: bytearray, n: int) -> tuple[int, Struct]:
        """The correlation id and answer of a whole ``frame`` of ``n`` bytes (closed and
        raised as a bad response when it does not decode)."""
        try:
            rcorr, resp = self._protocol.decode_frame(frame)
            st = self.stats
            st.responses += 1
            st.bytes_in += n + 4
            st.answered(rcorr)
            return rcorr, resp
        except KafkaError as exc:
            self._fail(f"bad response: {exc}", cause=exc)
        except Exception as exc:  # noqa: BLE001 - a decoder tripping over garbage is still a bad response
            self._fail(f"bad response: {type(exc).__name__}: {exc}", cause=exc)

    def _read_size(self, sock: socket.socket, corr: int, deadline: float) -> int:
        """The next 4-byte size prefix, reading ahead as much as one recv brings (a small
        response comes whole: one system call instead of two)."""
        buf, start, end = self._rbuf, self._rstart, self._rend
        if end - start < 4:
            if start:  # keep what is left at the front
                buf[: end - start] = buf[start:end]
                end, start = end - start, 0
            view = memoryview(buf)
            while end < 4:
                end += self._recv_some(sock, view[end:], corr, deadline, (end, 4, "size prefix"))
            self._rend = end
        self._rstart = start + 4
        n: int = _SIZE.unpack_from(buf, start)[0]
        return n

    def _frame(self, sock: socket.socket, n: int, corr: int, deadline: float) -> bytearray:
        """The ``n`` bytes of a frame: what was read ahead, then the rest read into the frame
        itself (one copy out of the kernel for a large Fetch response)."""
        buf, start, end = self._rbuf, self._rstart, self._rend
        have = end - start
        if have >= n:
            self._rstart = start + n
            return buf[start : start + n]
        frame = _frame_buffer(n)
        view = memoryview(frame)
        view[:have] = memoryview(buf)[start:end]  # one copy (a bytearray slice would make two)
        self._rstart = self._rend = 0
        self._fill(sock, view[have:], corr, deadline)
        return frame

    def _recv_some(
        self,
        sock: socket.socket,
        view: memoryview,
        corr: int,
        deadline: float,
        progress: tuple[int, int, str],
    ) -> int:
        """One recv into ``view`` before ``deadline``: how many bytes came (never 0);
        ``progress`` (bytes read, bytes wanted, of what) names how far a failed read got."""
        try:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            _set_timeout(sock, left)
            k = sock.recv_into(view, len(view))
        except OSError as exc:
            self._recv_failed(exc, corr, progress)
        if not k:
            self._recv_failed(None, corr, progress)
        return k

    def _recv_failed(
        self, exc: OSError | None, corr: int, progress: tuple[int, int, str]
    ) -> NoReturn:
        """Close and raise why a recv failed (``exc``) or found the stream closed (None)."""
        if isinstance(exc, TimeoutError):
            got, n, what = progress
            self._fail(
                f"no complete response within {self.request_timeout:.1f}s "
                f"(correlation id {corr}, {got} of {n} bytes of a {what} read)",
                timeout=True,
                cause=exc,
            )
        if isinstance(exc, ssl.SSLError):  # TLS 1.3: a refused client certificate shows here
            self._tls_failed(exc)
        if self._sock is None:  # closed by another thread of ours
            self._fail(self._closed_reason or "closed by the client", cause=exc)
        if exc is not None:
            self._fail(f"receive failed: {exc}", cause=exc)
        self._fail(
            f"closed by the broker ({self._protocol.in_flight} requests in flight)",
            closed_by_peer=True,
        )

    def _fill(self, sock: socket.socket, view: memoryview, corr: int, deadline: float) -> None:
        """Read exactly ``len(view)`` bytes before ``deadline`` (one deadline per response:
        each partial read waits only for what is left of it)."""
        got, n = 0, len(view)
        what = "size prefix" if n == 4 and view.obj is self._head else "frame"
        while got < n:
            got += self._recv_some(sock, view[got:], corr, deadline, (got, n, what))

    def _tls_failed(self, exc: ssl.SSLError) -> NoReturn:
        """Close and raise why the broker ended TLS after the handshake (TLS 1.3 refuses a
        client certificate only then)."""
        self._drop(f"TLS error: {exc}")
        raise SslAuthenticationError(
            self.host,
            self.port,
            f"the broker ended TLS: {exc.reason or exc} (does it require "
            "a client certificate: ssl.certificate.location?)",
        ) from exc

    def _fail(
        self,
        reason: str,
        timeout: bool = False,
        cause: BaseException | None = None,
        closed_by_peer: bool = False,
    ) -> NoReturn:
        """Close the connection and raise why (the error names this broker)."""
        self.stats.errors += 1
        self._drop(reason)
        err: KafkaError
        if timeout:
            err = KafkaTimeoutError(f"{self.address}: {reason}")
        else:
            err = KafkaConnectionError(self.host, self.port, reason, closed_by_peer=closed_by_peer)
        raise err from cause

    @property
    def in_flight(self) -> int:
        return self._protocol.in_flight


class _Behind:
    """A frame being read on a helper thread (:meth:`BrokerConnection.read_behind`): the
    size prefix into ``head``, the frame into the start of ``frame``; ``result`` is how many
    bytes of each the C reader read."""

    __slots__ = ("head", "frame", "result", "thread")

    def __init__(self, conn: BrokerConnection, sock: socket.socket, capacity: int) -> None:
        self.head = bytearray(4)
        self.frame = _frame_buffer(capacity)
        self.result: tuple[int, int] = (0, 0)
        timeout_ms = max(1, int(conn.request_timeout * 1000))
        self.thread = threading.Thread(
            target=self._run, args=(conn, sock, timeout_ms), name="kclient-read-behind", daemon=True
        )

    def _run(self, conn: BrokerConnection, sock: socket.socket, timeout_ms: int) -> None:
        assert _sock is not None
        try:  # (stopped short, it leaves the cause to the caller reading on)
            self.result = _sock.read_frame(sock.fileno(), self.head, self.frame, timeout_ms)
        finally:
            conn._leave(sock)


def _with_corr(frame: bytearray, corr: int) -> bytearray:
    """``frame`` with correlation id ``corr`` written in (a prepared frame's general way)."""
    _SIZE.pack_into(frame, 8, corr)
    return frame


def _set_timeout(sock: socket.socket, seconds: float) -> None:
    """Give ``sock`` the timeout ``seconds`` unless it has one within :data:`_TIMEOUT_SLACK` of
    it already: each ``settimeout`` is a system call (an ioctl), two per round trip before."""
    now = sock.gettimeout()
    if now is None or abs(now - seconds) > _TIMEOUT_SLACK:
        sock.settimeout(seconds)


def _stop_cause(why: int, err: int) -> OSError | None:
    """The exception for :meth:`BrokerConnection._recv_failed` of a C read that stopped for
    ``why`` (None: the stream ended)."""
    if why == _TIMED_OUT:
        return TimeoutError()
    return OSError(err, os.strerror(err)) if why == _FAILED else None


def _release(sock: socket.socket) -> None:
    """Release a shut-down socket's descriptor."""
    try:
        sock.close()
    except OSError:
        pass


def _pending_alert(sock: socket.socket) -> ssl.SSLError | None:
    """The TLS alert the broker sent before closing, if one is waiting to be read."""
    try:
        sock.settimeout(1.0)
        sock.recv(1)
    except ssl.SSLError as exc:
        return exc
    except OSError:
        pass
    return None
