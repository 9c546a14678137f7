"""The broker's network layer: one acceptor thread and N processor threads, as Kafka's NIO server.

Each processor runs a ``selectors`` loop over the connections the acceptor hands it, one
:class:`ServerProtocol` per connection.  Requests of a connection are handled strictly one after
another and answered in order: while a handler's Future is pending the connection is muted (no
reads, no further dispatch).  A handler returns a response body, None (no response: Produce with
acks=0) or a ``concurrent.futures.Future``.  Response parts that are file regions go out with
``os.sendfile``.  Any framing or decoding problem closes that one connection with a logged reason.

Requests are read by a :class:`~kclient.broker.frames.FrameReader` (frames.py): memory is spent
as bytes arrive, and large frames reserve their size from the ``queued.max.request.bytes`` pool
(memory_pool.py); a connection whose frame the pool refuses is muted until memory is released.
"""

from __future__ import annotations

import errno
import itertools
import logging
import os
import selectors
import socket
import ssl
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from functools import partial
from typing import Any

from kclient.protocol.apis import APIS
from kclient.protocol.error_codes import UnsupportedVersionError
from kclient.protocol.framing import API_VERSIONS_KEY, Request, ServerProtocol
from kclient.protocol.schema import Api

from .connection_quotas import ConnectionQuotas, RateLimitedLog, TooManyConnectionsError
from .delayed import DelayedResponse
from .frames import FrameReader
from .listeners import Listener
from .memory_pool import MemoryPool
from .request_stats import RequestStats

__all__ = ["SocketServer", "DropConnection", "api_versions_body"]

log = logging.getLogger("kclient.broker.network")

HIGH_WATER = 4 * 1024 * 1024  # stop reading a connection whose output backs up past this
_JOIN_LIMIT = 64 * 1024  # coalesce small consecutive byte parts up to this size
_SLOT_WAIT = 0.05  # at max.connections: how often the acceptor looks for a slot
#: accept() errors that mean the process or system is out of descriptors or buffers
_OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


class DropConnection(Exception):
    """Raised by a dispatcher to close the requesting connection without a response."""


#: API definition -> (min, max) version served.
Served = Mapping[Api[Any, Any], tuple[int, int]]


def api_versions_body(served: Served, error_code: int = 0) -> dict[str, Any]:
    """An ApiVersions response body listing the served version ranges, by API key."""
    return {
        "error_code": error_code,
        "throttle_time_ms": 0,
        "api_keys": [
            {"api_key": a.key, "min_version": lo, "max_version": hi}
            for a, (lo, hi) in sorted(served.items(), key=lambda i: i[0].key)
        ],
    }


class _Region:
    """Send progress through a file region (fd, position, length); holds the region alive."""

    __slots__ = ("fd", "position", "remaining", "region")

    def __init__(self, region: Any):
        self.region = region
        f = region.file
        self.fd = f if isinstance(f, int) else f.fileno()
        self.position = region.position
        self.remaining = len(region)

    def close(self) -> None:
        """Let go of the region (its owner closes the file when unreferenced)."""
        self.region = None


class _Conn:
    """One client connection: its protocol state, queued requests and pending output."""

    __slots__ = (
        "sock",
        "peer",
        "proto",
        "reader",
        "pending",
        "busy",
        "waiting",
        "out",
        "out_bytes",
        "closed",
        "last_active",
        "interest",
        "held_back",
        "tls",
        "handshaking",
        "hs_write",
        "session",
    )

    def __init__(
        self,
        sock: socket.socket,
        peer: str,
        apis: Mapping[int, Api[Any, Any]],
        max_frame: int,
        pool: MemoryPool | None = None,
    ):
        self.sock = sock
        self.tls = self.handshaking = isinstance(sock, ssl.SSLSocket)
        self.hs_write = False  # the TLS handshake waits to write, not to read
        self.session: Any = None  # security state (principal, SASL), see sasl/
        self.peer = peer
        self.proto = ServerProtocol(apis, max_frame)
        self.reader = FrameReader(self._decode, max_frame, pool)
        self.pending: deque[Request | _RawToken] = deque()
        self.busy, self.out_bytes = False, 0
        self.waiting: Future[Any] | None = None  # the delayed response of the request in progress
        self.held_back = False  # bytes arrived behind a parked response
        self.out: deque[Any] = deque()  # bytes and file regions (_Region) to send
        self.closed, self.last_active, self.interest = False, 0.0, 0

    def _decode(self, frame: Any) -> Any:
        """A request, or a bare SASL token while the session is in the v0 exchange."""
        if self.session is not None and self.session.raw_mode:
            return _RawToken(bytes(frame))
        return self.proto.decode_frame(frame)


class _RawToken:
    """A bare SASL token (SaslHandshake v0's exchange: size-prefixed, no request header)."""

    __slots__ = ("data",)

    def __init__(self, data: bytes):
        self.data = data


def _is_bytes(part: Any) -> bool:
    """True for in-memory parts (file regions are not)."""
    return isinstance(part, (bytes, bytearray, memoryview))


def _coalesce(parts: list[Any]) -> list[Any]:
    """Join runs of small byte parts so a response goes out in few syscalls."""
    out: list[Any] = []
    run: list[Any] = []
    for part in parts:
        if _is_bytes(part) and len(part) < _JOIN_LIMIT:
            run.append(part)
            continue
        if run:
            out.append(b"".join(run))
            run = []
        out.append(part if _is_bytes(part) or len(part) == 0 else _Region(part))
    if run:
        out.append(b"".join(run))
    return [p for p in out if not _is_bytes(p) or len(p)]


class _Processor(threading.Thread):
    """One network thread: a selector loop over its share of the connections."""

    def __init__(self, server: SocketServer, index: int):
        super().__init__(name=f"kclient-broker-network-{server.port}-{index}", daemon=True)
        self.server = server
        self.sel = selectors.DefaultSelector()
        self.inbox: deque[Any] = deque()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self.sel.register(self._wake_r, selectors.EVENT_READ, None)
        self.conns: set[_Conn] = set()
        self.starved: set[_Conn] = set()  # muted until the memory pool has room
        self.running = True

    # -------------------------------------------------------------- cross-thread entry points
    def wake(self) -> None:
        """Interrupt select() so the inbox is processed."""
        try:
            self._wake_w.send(b"\0")
        except (BlockingIOError, OSError):
            pass

    def add(self, sock: socket.socket, peer: str) -> None:
        """Hand over a freshly accepted connection."""
        self.inbox.append(("conn", sock, peer))
        self.wake()

    # -------------------------------------------------------------- loop
    def run(self) -> None:
        """Select, read, dispatch, write until stopped; then close every connection."""
        next_sweep = time.monotonic() + 1.0
        while self.running:
            try:
                events = self.sel.select(0.5)
            except OSError:
                break
            for key, mask in events:
                if key.data is None:
                    self._drain_wakeups()
                    continue
                conn = key.data
                if mask & selectors.EVENT_READ and not conn.closed:
                    self._read(conn)
                if mask & selectors.EVENT_WRITE and not conn.closed:
                    self._write(conn)
            self._process_inbox()
            if self.starved:
                self._retry_starved()
            if time.monotonic() >= next_sweep:
                next_sweep = time.monotonic() + 1.0
                self._sweep_idle()
        for conn in list(self.conns):
            self._close(conn, None)
        self.sel.close()
        self._wake_r.close()
        self._wake_w.close()

    def _drain_wakeups(self) -> None:
        """Empty the wake-up socket."""
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, OSError):
            pass

    def _process_inbox(self) -> None:
        """New connections and completed delayed responses from other threads."""
        while self.inbox:
            item = self.inbox.popleft()
            if item[0] == "conn":
                conn = _Conn(
                    item[1],
                    item[2],
                    self.server.apis,
                    self.server.max_request_size,
                    self.server.pool,
                )
                conn.last_active = time.monotonic()
                self.conns.add(conn)
                self.server.stats.connected()
                if not conn.handshaking:
                    self._open_session(conn)
                self._update_interest(conn)
            else:
                _, conn, request, future = item
                self._complete(conn, request, future)

    def _retry_starved(self) -> None:
        """Memory came back to the pool: let the muted connections reserve their frames."""
        pool = self.server.pool
        if pool is None or pool.is_out_of_memory:
            return
        for conn in list(self.starved):
            self.starved.discard(conn)
            if conn.closed:
                continue
            self._take(conn)
            if not conn.closed:
                self._pump(conn)

    def _sweep_idle(self) -> None:
        """Close connections idle longer than connections.max.idle.ms."""
        limit = self.server.max_idle_s
        now = time.monotonic()
        for conn in list(self.conns):
            if not conn.busy and not conn.out and now - conn.last_active > limit:
                self._close(conn, "idle for longer than connections.max.idle.ms")

    # -------------------------------------------------------------- reading and dispatch
    def _read(self, conn: _Conn) -> None:
        """Receive once, decode the requests that completed, dispatch them in order."""
        if conn.handshaking:
            self._handshake(conn)
            return
        if conn.busy:
            self._check_hangup(conn)
            return
        try:
            more = conn.reader.fill(conn.sock)
        except (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
            return
        except ConnectionResetError:
            self._close(conn, None)
            return
        except OSError as exc:
            self._close(conn, f"read failed: {exc}")
            return
        if not more:
            self._close(conn, None)
            return
        conn.last_active = time.monotonic()
        self._take(conn, more)
        if not conn.closed:
            self._pump(conn)

    def _check_hangup(self, conn: _Conn) -> None:
        """A connection waiting on a parked response became readable: closed by the peer (the
        parked operation is abandoned), or a pipelined request (left unread until the answer)."""
        try:
            data = conn.sock.recv(1, socket.MSG_PEEK)
        except (BlockingIOError, InterruptedError):
            return
        except ValueError:  # a socket that cannot peek (TLS): stop watching
            data = b"?"
        except OSError:  # reset: the peer is gone
            data = b""
        if not data:
            self._close(conn, None)
            return
        conn.held_back = True
        self._update_interest(conn)

    def _take(self, conn: _Conn, more: bool = True) -> None:
        """Queue the requests the reader completed; a reader the pool refused is muted."""
        try:
            conn.pending.extend(conn.reader.take())
            while more and not conn.reader.starved and _tls_pending(conn.sock):
                more = conn.reader.fill(conn.sock)  # TLS: decrypted bytes the selector
                conn.pending.extend(conn.reader.take())  # cannot see
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            pass
        except Exception as exc:  # noqa: BLE001 - any decoding failure: this connection's bytes are bad
            self._close(conn, f"bad request frame: {exc!r}")
            return
        if conn.reader.starved:
            self.starved.add(conn)

    def _handshake(self, conn: _Conn) -> None:
        """One step of a TLS handshake; a client that is not speaking TLS is told so."""
        sock = conn.sock
        assert isinstance(sock, ssl.SSLSocket), "only TLS connections handshake"
        try:
            sock.do_handshake()
        except ssl.SSLWantReadError:
            conn.hs_write = False
        except ssl.SSLWantWriteError:
            conn.hs_write = True
        except (ssl.SSLError, OSError) as exc:
            reason, hint = getattr(exc, "reason", None) or str(exc), ""
            if reason in ("WRONG_VERSION_NUMBER", "HTTP_REQUEST", "RECORD_LAYER_FAILURE"):
                _send_alert(sock)
                hint = " (a plaintext client on a TLS listener)"
            self._close(
                conn,
                f"TLS handshake on listener {self.server.listener.name} failed: {reason}{hint}",
            )
            return
        else:
            conn.handshaking = False
            conn.last_active = time.monotonic()
            self._open_session(conn)
        self._update_interest(conn)

    def _open_session(self, conn: _Conn) -> None:
        """The connection's security state, once its transport is up (TLS: the peer's
        certificate is known)."""
        factory = self.server.sessions
        if factory is not None:
            conn.session = factory(conn.sock, conn.peer)

    def _pump(self, conn: _Conn) -> None:
        """Dispatch queued requests until one is delayed; then write and re-arm the selector."""
        while not conn.busy and conn.pending and not conn.closed:
            request = conn.pending.popleft()
            if isinstance(request, _RawToken):
                if not self._raw_token(conn, request):
                    return
                continue
            request.client_host = conn.peer.rpartition(":")[0]
            request.listener = self.server.listener.name
            request.received = time.monotonic()
            if conn.session is not None:
                refusal = conn.session.admit(request)
                if refusal is not None:
                    self._close(conn, refusal)
                    return
                request.session = conn.session
            try:
                result = self._dispatch(request)
            except DropConnection as exc:
                self._close(conn, f"dropped on request ({exc or 'fault injection'})")
                return
            except Exception as exc:  # a handler bug must not take the broker down
                log.exception("handler for %s failed", _describe(request))
                self._close(conn, f"handler error: {exc!r}")
                return
            if isinstance(result, Future):
                if not result.done():
                    conn.busy, conn.waiting = True, result
                    result.add_done_callback(partial(self._post_completion, conn, request))
                    break
                if not self._respond_future(conn, request, result):
                    return
            else:
                self._respond(conn, request, result)
        if not conn.busy and not conn.pending:
            conn.reader.release_held()  # every request read so far is answered
        if not conn.closed:
            self._write(conn)

    def _raw_token(self, conn: _Conn, token: _RawToken) -> bool:
        """Answer one bare SASL token; False (closed) when authentication failed."""
        answer = conn.session.raw_token(token.data)
        if answer is None:
            self._close(conn, "SASL authentication failed (SaslHandshake v0 exchange)")
            return False
        conn.out.append(struct.pack(">i", len(answer)) + answer)
        conn.out_bytes += 4 + len(answer)
        return True

    def _dispatch(self, request: Request) -> Any:
        """Answer protocol-level problems here; hand good requests to the broker."""
        error = request.error
        if error is None and not self.server.serves(request):
            lo, hi = self.server.ranges[request.header.api_key]
            error = UnsupportedVersionError(f"served v{lo}-v{hi}")
        if error is not None:
            if request.header.api_key == API_VERSIONS_KEY:
                return _UnsupportedApiVersions(self.server.served)
            raise DropConnection(f"{_describe(request)}: {error}")
        return self.server.handler(request)

    def _post_completion(self, conn: _Conn, request: Request, future: Future[Any]) -> None:
        """Future callback (any thread): queue the completion for this processor."""
        self.inbox.append(("done", conn, request, future))
        self.wake()

    def _complete(self, conn: _Conn, request: Request, future: Future[Any]) -> None:
        """A delayed response is ready: send it and continue with the queued requests."""
        conn.busy, conn.waiting, conn.held_back = False, None, False
        if conn.closed:
            return
        if self._respond_future(conn, request, future):
            self._pump(conn)

    def _respond_future(self, conn: _Conn, request: Request, future: Future[Any]) -> bool:
        """Respond with a finished Future's body; False (connection closed) if it failed."""
        try:
            body = future.result()
        except DropConnection as exc:
            self._close(conn, f"dropped on request ({exc or 'fault injection'})")
            return False
        except Exception as exc:  # noqa: BLE001 - one request's failure closes its connection only
            log.error("delayed %s failed: %r", _describe(request), exc)
            self._close(conn, f"handler error: {exc!r}")
            return False
        self._respond(conn, request, body)
        return not conn.closed

    def _respond(self, conn: _Conn, request: Request, body: Any) -> None:
        """Encode a response body (None: no response) and queue its parts."""
        stats, api = self.server.stats, request.api
        if body is None:
            if api is not None:
                stats.answered(api.name, request.received, request.size, 0, False)
            return
        try:
            if isinstance(body, _UnsupportedApiVersions):
                parts = [conn.proto.encode_response(request.header, body.body, version=0)]
            else:
                parts = conn.proto.encode_response_parts(request.header, body)
        except Exception as exc:
            log.exception("cannot encode the response to %s", _describe(request))
            self._close(conn, f"response encoding failed: {exc!r}")
            return
        before = conn.out_bytes
        for part in _coalesce(parts):
            conn.out.append(part)
            conn.out_bytes += part.remaining if isinstance(part, _Region) else len(part)
        stats.answered(
            api.name if api is not None else "ApiVersions",
            request.received,
            request.size,
            conn.out_bytes - before,
            bool(
                body.get("error_code") if isinstance(body, dict) else getattr(body, "error_code", 0)
            ),
        )

    # -------------------------------------------------------------- writing
    def _write(self, conn: _Conn) -> None:
        """Write as much pending output as the socket takes (sendfile for file regions)."""
        if conn.handshaking:
            self._handshake(conn)
            return
        out = conn.out
        try:
            while out:
                part = out[0]
                if isinstance(part, _Region):
                    if not self._send_region(conn, part):
                        break
                    out.popleft().close()
                    continue
                n = conn.sock.send(part)
                conn.out_bytes -= n
                if n < len(part):
                    out[0] = memoryview(part)[n:]
                    break
                out.popleft()
        except (BlockingIOError, InterruptedError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
            pass
        except (BrokenPipeError, ConnectionResetError):
            self._close(conn, None)  # the client went away: nothing wrong on our side
            return
        except OSError as exc:
            self._close(conn, f"write failed: {exc}")
            return
        self._update_interest(conn)

    def _send_region(self, conn: _Conn, part: _Region) -> bool:
        """sendfile() a region; True when it is fully sent (TLS: copied, then encrypted)."""
        if conn.tls:
            return self._send_region_copy(conn, part)
        while part.remaining > 0:
            try:
                n = os.sendfile(conn.sock.fileno(), part.fd, part.position, part.remaining)
            except (BlockingIOError, InterruptedError):
                return False
            except OSError as exc:
                if exc.errno in (22, 38, 95):  # EINVAL/ENOSYS/EOPNOTSUPP: no sendfile here
                    return self._send_region_copy(conn, part)
                raise
            if n == 0:
                raise OSError(f"file region ended early ({part.remaining} bytes missing)")
            part.position += n
            part.remaining -= n
            conn.out_bytes -= n
        return True

    def _send_region_copy(self, conn: _Conn, part: _Region) -> bool:
        """Fallback without sendfile: read the rest of the region and queue it as bytes."""
        data = os.pread(part.fd, part.remaining, part.position)
        conn.out[0] = data
        conn.out_bytes += len(data) - part.remaining
        part.remaining = 0
        part.close()
        return False

    def _update_interest(self, conn: _Conn) -> None:
        """Read unless muted (request in progress or output backed up); write if output waits."""
        if conn.closed:
            return
        mask = 0
        if conn.handshaking:
            mask = selectors.EVENT_WRITE if conn.hs_write else selectors.EVENT_READ
        elif (
            not conn.busy
            and not conn.pending
            and conn.out_bytes < HIGH_WATER
            and not conn.reader.starved
        ):
            mask |= selectors.EVENT_READ
        elif conn.busy and isinstance(conn.waiting, DelayedResponse) and not conn.held_back:
            mask |= selectors.EVENT_READ  # only to notice the peer hanging up
        if conn.out and not conn.handshaking:
            mask |= selectors.EVENT_WRITE
        if mask == conn.interest:
            return
        try:
            if conn.interest == 0:
                self.sel.register(conn.sock, mask, conn)
            elif mask == 0:
                self.sel.unregister(conn.sock)
            else:
                self.sel.modify(conn.sock, mask, conn)
        except (KeyError, ValueError, OSError) as exc:
            self._close(conn, f"selector failed: {exc}")
            return
        conn.interest = mask

    def _close(self, conn: _Conn, reason: str | None) -> None:
        """Close one connection; a reason means something was wrong, so it is logged."""
        if conn.closed:
            return
        conn.closed = True
        self.server.stats.closed()
        if reason:
            log.warning("closing connection from %s: %s", conn.peer, reason)
        if conn.interest:
            try:
                self.sel.unregister(conn.sock)
            except (KeyError, ValueError, OSError):
                pass
        try:
            conn.sock.close()
        except OSError:
            pass
        for part in conn.out:
            if isinstance(part, _Region):
                part.close()
        conn.out.clear()
        conn.pending.clear()
        conn.reader.close()
        if isinstance(conn.waiting, DelayedResponse):
            conn.waiting.abandon()  # a parked fetch lets go of its watchers and timer
        conn.waiting = None
        self.starved.discard(conn)
        self.conns.discard(conn)
        self.server.quotas.dec(conn.peer.rpartition(":")[0])


class _UnsupportedApiVersions:
    """Marker body: answer an unknown ApiVersions version with v0, error 35 and our ranges."""

    def __init__(self, served: Served):
        self.body = api_versions_body(served, error_code=UnsupportedVersionError.errno)


def _tls_pending(sock: socket.socket) -> int:
    """Bytes TLS has decrypted but not handed out yet (0 for a plain socket)."""
    return sock.pending() if isinstance(sock, ssl.SSLSocket) else 0


#: A TLS alert record (fatal, protocol_version): what a plaintext client reads from a TLS listener,
#: so it can say "this is a TLS listener" instead of taking the close for an old broker.
_TLS_ALERT = b"\x15\x03\x03\x00\x02\x02\x46"


def _send_alert(sock: ssl.SSLSocket) -> None:
    """Write the alert on the raw socket (OpenSSL sends none for a non-TLS first record)."""
    try:
        raw = socket.socket(fileno=os.dup(sock.fileno()))
    except OSError:
        return
    try:
        raw.send(_TLS_ALERT)
    except OSError:
        pass
    finally:
        raw.close()


def _describe(request: Request) -> str:
    """A request named for log messages."""
    h = request.header
    name = request.api.name if request.api is not None else f"api key {h.api_key}"
    return f"{name} v{h.api_version} (correlation id {h.correlation_id}, client {h.client_id!r})"


class SocketServer:
    """Acceptor plus processors on ``host:port``; ``handler(request)`` answers each request."""

    def __init__(
        self,
        host: str,
        port: int,
        handler: Callable[[Request], Any],
        *,
        served: Served | None = None,
        num_processors: int = 3,
        max_request_size: int = 104857600,
        max_idle_ms: int = 600000,
        pool: MemoryPool | None = None,
        quotas: ConnectionQuotas | None = None,
        listener: Listener | None = None,
        sessions: Callable[[socket.socket, str], Any] | None = None,
        stats: RequestStats | None = None,
    ):
        self.host = host
        self.port = port
        self.listener = listener or Listener("PLAINTEXT", host, port, "PLAINTEXT")
        self.tls = self.listener.ssl_context if self.listener.uses_tls else None
        self.sessions = sessions  # (socket, peer) -> the connection's security state
        self.handler = handler
        #: request metrics (MiniBroker.metrics()); listeners of one broker share one
        self.stats = stats if stats is not None else RequestStats()
        self.served: Served = (
            served
            if served is not None
            else {a: (a.min_version, a.max_version) for a in APIS.values()}
        )
        self.apis = {a.key: a for a in self.served}
        self.ranges = {a.key: r for a, r in self.served.items()}
        self.max_request_size = max_request_size
        self.max_idle_s = max_idle_ms / 1000.0
        self.pool = pool
        self.quotas = quotas if quotas is not None else ConnectionQuotas()
        self._accept_log = RateLimitedLog(log)
        self._refused_log = RateLimitedLog(log)
        self.num_processors = max(1, num_processors)
        self._listener: socket.socket | None = None
        self._processors: list[_Processor] = []
        self._acceptor: threading.Thread | None = None
        self._stop_r: socket.socket | None = None
        self._stop_w: socket.socket | None = None

    def serves(self, request: Request) -> bool:
        """Whether the request's version is in its API's served range."""
        lo, hi = self.ranges[request.header.api_key]
        return lo <= request.header.api_version <= hi

    def bind(self) -> None:
        """Bind and listen (SO_REUSEADDR, so a restart gets the same port back)."""
        if self._listener is not None:
            return
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self.port))
        except OSError:
            sock.close()
            raise
        sock.listen(128)
        sock.setblocking(False)
        self._listener = sock
        self.port = sock.getsockname()[1]

    def start(self) -> None:
        """Bind if needed and start the acceptor and processor threads."""
        self.bind()
        self._stop_r, self._stop_w = socket.socketpair()
        self._processors = [_Processor(self, i) for i in range(self.num_processors)]
        if self.pool is not None:
            self.pool.add_listener(self._wake_processors)
        for p in self._processors:
            p.start()
        self._acceptor = threading.Thread(
            target=self._accept_loop, daemon=True, name=f"kclient-broker-acceptor-{self.port}"
        )
        self._acceptor.start()

    def _wake_processors(self) -> None:
        """The memory pool has room again: processors retry their muted connections."""
        for p in self._processors:
            p.wake()

    def _accept_loop(self) -> None:
        """Accept connections and deal them round-robin to the processors.  At
        ``max.connections`` it waits for a slot; after a failed accept (file descriptors
        exhausted) it backs off, 10 ms doubling to 1 s, instead of spinning on the listener."""
        listener, stop_r = self._listener, self._stop_r
        assert listener is not None and stop_r is not None, "start() binds and makes the pipe"
        sel = selectors.DefaultSelector()
        sel.register(listener, selectors.EVENT_READ)
        sel.register(stop_r, selectors.EVENT_READ)
        pause = selectors.DefaultSelector()  # waiting: only the stop pipe wakes us
        pause.register(stop_r, selectors.EVENT_READ)
        turn = itertools.cycle(self._processors)
        backoff = 0.0
        try:
            while True:
                wait = backoff or (None if self.quotas.has_slot() else _SLOT_WAIT)
                keys = sel.select() if wait is None else pause.select(wait)
                if any(key.fileobj is stop_r for key, _ in keys):
                    return
                backoff = self._accept_some(listener, turn, backoff)
        finally:
            sel.close()
            pause.close()

    def _accept_some(
        self, listener: socket.socket, turn: Iterator[_Processor], backoff: float
    ) -> float:
        """Accept pending connections while slots last; returns the backoff before the next."""
        while self.quotas.has_slot():
            try:
                sock, addr = listener.accept()
            except (BlockingIOError, InterruptedError):
                return 0.0
            except OSError as exc:
                if exc.errno in _OUT_OF_RESOURCES:
                    backoff = min(max(2 * backoff, 0.01), 1.0)
                    self._accept_log.warning(
                        "accept failed: %s; backing off %.2f s (raise the "
                        "open files limit or max.connections)",
                        exc,
                        backoff,
                    )
                    return backoff
                self._accept_log.warning("accept failed: %s", exc)
                return 0.0
            self._hand_over(sock, addr[0], addr[1], turn)
        return 0.0

    def _hand_over(
        self, sock: socket.socket, host: str, port: int, turn: Iterator[_Processor]
    ) -> None:
        """Count the connection against its address (refused at the limit) and pass it on."""
        try:
            self.quotas.inc(host)
        except TooManyConnectionsError as exc:
            self._refused_log.warning("rejected connection from %s: %s", host, exc)
            sock.close()
            return
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            self.quotas.dec(host)
            sock.close()
            return
        if self.tls is not None:  # handshake in the processor's loop
            try:
                sock = self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
            except OSError as exc:
                log.warning("TLS setup of a connection from %s failed: %s", host, exc)
                self.quotas.dec(host)
                sock.close()
                return
        next(turn).add(sock, f"{host}:{port}")

    def stop(self) -> None:
        """Stop accepting, close every connection, join the threads."""
        if self._acceptor is None or self._stop_r is None or self._stop_w is None:
            return
        self._stop_w.send(b"x")
        self._acceptor.join(5)
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        for p in self._processors:
            p.running = False
            p.wake()
        for p in self._processors:
            p.join(5)
        self._stop_r.close()
        self._stop_w.close()
        self._acceptor = None
        self._processors = []
