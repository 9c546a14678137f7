"""One broker connection on an asyncio transport, driving the sans-IO :class:`ClientProtocol`.

Theory of operation: :meth:`AIOConnection.send` encodes a request into one frame and hands it
whole to ``transport.write`` - a synchronous call, so no cancellation can leave half a frame
in the stream - and returns an ``asyncio.Future`` for the response.  The transport receives
into the buffers the protocol hands out (:class:`_Receiver`, an ``asyncio.BufferedProtocol``
over :meth:`ClientProtocol.read_buffer`): a large answer goes from the kernel straight into a
buffer of its own size, decoded in place, so a megabyte Fetch answer is copied once on its way
in (asyncio's streams copied it four times).  The callbacks resolve the futures by correlation
id.  When the stream breaks (or a request times out) every waiting future fails with
:class:`KafkaConnectionError` and the connection is closed; the owner opens a new one.
Nothing here blocks the event loop or starts a thread.

TLS comes from the config's ``ssl.SSLContext`` (``loop.create_connection(ssl=...)``).  The
handshake (ApiVersions, the old-broker fallback, SASL over SaslHandshake v0 or v1 +
SaslAuthenticate) is the core's (:mod:`kclient.core.handshake`), run by the asyncio driver;
re-authentication (KIP-368) holds the frames other tasks send meanwhile and writes them after.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from kclient.connection import ConnectionSettings
from kclient.core.handshake import api_versions, authenticate, reauth_due
from kclient.errors import KafkaConnectionError, KafkaTimeoutError
from kclient.protocol.framing import RAW_CORR, ClientProtocol, Reader
from kclient.protocol.schema import Api, Struct
from kclient.protocol.versions import pick_version

from .driver import ConnectionTransport, run
from .timeouts import within

__all__ = ["AIOConnection"]

log = logging.getLogger(__name__)
_Req = TypeVar("_Req")
_Resp = TypeVar("_Resp")


class _Receiver(asyncio.BufferedProtocol):
    """One transport's protocol: bytes received into the frame buffers of ``proto``, the
    answers handed to the connection; write flow control for :meth:`AIOConnection.drain`.
    A transport no longer the connection's (reopened meanwhile) reports nothing."""

    def __init__(self, conn: AIOConnection, proto: ClientProtocol) -> None:
        self.conn, self.proto = conn, proto
        self.transport: asyncio.Transport | None = None
        self._paused = False
        self._drains: list[asyncio.Future[None]] = []
        self.lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.proto.read_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        if self.conn._receiver is self:
            self.conn._received(self.proto, nbytes)

    def eof_received(self) -> bool:
        if self.conn._receiver is self:
            self.conn._fail("closed by the broker", closed_by_peer=True)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if self.conn._receiver is self:
            if exc is None:
                self.conn._fail("closed by the broker", closed_by_peer=True)
            else:
                self.conn._fail(f"receive failed: {exc!r}")
        self._paused = False
        self._wake()
        if not self.lost.done():
            self.lost.set_result(None)

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._wake()

    def _wake(self) -> None:
        drains, self._drains = self._drains, []
        for fut in drains:
            if not fut.done():
                fut.set_result(None)

    async def drain(self) -> None:
        """Wait while the transport's write buffer is above its high-water mark."""
        if self._paused and not self.lost.done():
            fut = asyncio.get_running_loop().create_future()
            self._drains.append(fut)
            await fut


class AIOConnection:
    """A connection to one broker: pipelined requests, responses matched by correlation id."""

    def __init__(
        self, host: str, port: int, settings: ConnectionSettings, node_id: int | None = None
    ) -> None:
        self.host, self.port, self.node_id = host, int(port), node_id
        self.settings = settings
        self.versions: dict[int, tuple[int, int]] = {}
        self._proto = ClientProtocol(settings.client_id, settings.max_frame)
        self._receiver: _Receiver | None = None
        self._transport: asyncio.Transport | None = None
        self._waiters: dict[int, tuple[asyncio.Future[Struct], float]] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._closed: str | None = "not connected"
        #: count of close() calls: a connect() that sees it change was cancelled
        self._closes = 0
        self._handshake = settings.handshake(self.host, self.port)
        self._reauth_at: float | None = None  # monotonic time to re-authenticate (SASL)
        #: frames sent while re-authenticating, written once it is done (None: not holding)
        self._held: list[bytes] | None = None
        self.stats = settings.connection_stats(self.host, self.port, node_id)

    def __repr__(self) -> str:
        return f"AIOConnection({self.host}:{self.port}, node={self.node_id})"

    @property
    def connected(self) -> bool:
        """True between a successful :meth:`connect` and a close or failure."""
        return self._closed is None

    @property
    def in_flight(self) -> int:
        """Requests written whose responses have not arrived."""
        return len(self._waiters)

    async def connect(self) -> AIOConnection:
        """Open the stream (TLS if configured), negotiate API versions, authenticate (SASL)."""
        closes = self._closes
        self._reauth_at = None
        await self._open(closes)
        try:
            negotiated = await run(
                api_versions(self._handshake), ConnectionTransport(_Direct(self))
            )
            while negotiated.reopen:  # closed on ApiVersions: going away, or before 0.10
                await self._open(closes)
                if negotiated.follow_up is None:
                    break
                negotiated = await run(negotiated.follow_up, ConnectionTransport(_Direct(self)))
            self.versions = negotiated.versions
            await self._authenticate()
        except BaseException:
            self._shut("connect failed")
            raise
        self.stats.connects += 1
        self.stats.state = "UP"
        return self

    async def _open(self, closes: int) -> None:
        """Open the transport; a :meth:`close` since ``closes`` cancels it."""
        security = self.settings.security
        timeout = self.settings.connect_timeout_ms / 1000.0
        proto = ClientProtocol(self.settings.client_id, self.settings.max_frame)
        try:
            transport, receiver = await within(
                asyncio.get_running_loop().create_connection(
                    lambda: _Receiver(self, proto),
                    self.host,
                    self.port,
                    ssl=security.ssl_context,
                    server_hostname=self.host if security.ssl_context is not None else None,
                ),
                timeout,
                lambda late: late[0].abort(),  # opened for nobody
            )
        except (OSError, asyncio.TimeoutError) as exc:
            self.stats.errors += 1
            self.stats.state = "DOWN"
            why = (
                f"no answer within {timeout:.1f}s (connect.timeout.ms)"
                if isinstance(exc, (TimeoutError, asyncio.TimeoutError))
                else str(exc)
            )
            raise KafkaConnectionError(self.host, self.port, why) from exc
        if self._closes != closes:  # close() came while we connected: it wins
            transport.abort()
            raise KafkaConnectionError(
                self.host, self.port, f"closed while connecting: {self._closed}"
            )
        self._receiver, self._transport = receiver, cast(asyncio.Transport, transport)
        self._proto = proto
        self._closed = None

    async def _authenticate(self) -> None:
        """The SASL exchange, if configured; its lifetime schedules re-authentication."""
        if self._handshake.sasl is None:
            return
        lifetime = await run(
            authenticate(self._handshake, self.versions), ConnectionTransport(_Direct(self))
        )
        self._reauth_at = reauth_due(lifetime, time.monotonic())

    async def _reauthenticate(self) -> None:
        """KIP-368 on this connection: frames other tasks send meanwhile wait in ``_held``."""
        self._reauth_at, self._held = None, []
        try:
            await self._authenticate()
        except BaseException as exc:
            self._fail(f"re-authentication failed: {exc}")
            raise
        finally:
            held, self._held = self._held, None
            if self._transport is not None and self._closed is None:
                for frame in held:
                    self._transport.write(frame)

    async def raw_exchange(self, token: bytes) -> bytes:
        """One bare size-prefixed token each way (the SASL exchange after SaslHandshake v0)."""
        transport = self._require_transport()
        fut = self._expect(RAW_CORR, "SaslToken")
        transport.write(self._proto.send_raw(token))
        return cast(bytes, await fut)

    def version(self, api: Api[Any, Any], highest: int | None = None) -> int:
        """The highest version of ``api`` both sides support."""
        return pick_version(api, self.versions, highest)

    def send(
        self,
        api: Api[_Req, Any],
        body: _Req | Mapping[str, Any],
        version: int | None = None,
        expect_response: bool = True,
        reader: Reader | None = None,
    ) -> asyncio.Future[Struct] | None:
        """Write one request now (whole, synchronously); the future of its response (its
        body read by ``reader`` first, :meth:`ClientProtocol.send_request`).  While the
        connection re-authenticates the frame waits and is written after, in order."""
        return self._send(api, body, version, expect_response, self._held, reader)

    def _send(
        self,
        api: Api[Any, Any],
        body: Any,
        version: int | None,
        expect_response: bool,
        held: list[bytes] | None,
        reader: Reader | None = None,
    ) -> asyncio.Future[Struct] | None:
        """Encode and write (or add to ``held``) one request frame."""
        transport = self._require_transport()
        if version is None:
            version = self.version(api)
        corr, frame = self._proto.send_request(api, version, body, expect_response, reader)
        self._put(transport, frame, held, api)
        return self._expect(corr, api.name) if expect_response else None

    def _put(
        self,
        transport: asyncio.Transport,
        frame: bytes,
        held: list[bytes] | None,
        api: Api[Any, Any],
    ) -> None:
        """Write ``frame`` (or add it to ``held``) and count it."""
        if held is not None:
            held.append(frame)
        else:
            transport.write(frame)
        st = self.stats
        st.requests += 1
        st.by_api[api.name] += 1
        st.bytes_out += len(frame)

    def send_framed(
        self,
        api: Api[Any, Any],
        version: int,
        frame_for: Callable[[int], bytes | bytearray],
        reader: Reader | None,
    ) -> asyncio.Future[Struct]:
        """Write a request the caller frames (``frame_for(correlation id)``: the whole frame, a
        hot path's prepared one, which may be reused: a copy is written); the future of its
        answer, as :meth:`send`'s."""
        transport = self._require_transport()
        corr = self._proto.reserve(api, version, True, reader)
        self._put(transport, bytes(frame_for(corr)), self._held, api)
        return self._expect(corr, api.name)

    def _require_transport(self) -> asyncio.Transport:
        if self._closed is not None or self._transport is None:
            raise KafkaConnectionError(self.host, self.port, self._closed or "not connected")
        return self._transport

    def _expect(self, corr: int, name: str) -> asyncio.Future[Any]:
        """The future of the answer to ``corr``, under the request timeout."""
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        now = time.monotonic()
        self._waiters[corr] = (fut, now)
        self.stats.sent_at[corr] = (now, name)
        if self._timer is None:
            self._arm_timer()
        return fut

    async def request(
        self, api: Api[_Req, _Resp], body: _Req | Mapping[str, Any], version: int | None = None
    ) -> _Resp:
        """Send a request and await its response (typed as ``api``'s response view); first
        re-authenticate when the SASL session is due and nothing is in flight (KIP-368)."""
        due = self._reauth_at
        if due is not None and not self._waiters and time.monotonic() >= due:
            await self._reauthenticate()
        fut = self.send(api, body, version)
        assert fut is not None
        return cast(_Resp, await fut)

    async def drain(self) -> None:
        """Wait while the socket's send buffer is above its high-water mark (back-pressure)."""
        receiver = self._receiver
        if receiver is not None and self._closed is None:
            await receiver.drain()

    def _arm_timer(self) -> None:
        timeout = self.settings.request_timeout_ms / 1000.0
        self._timer = asyncio.get_running_loop().call_later(
            timeout / 4 + 0.05, self._check_timeouts
        )

    def _check_timeouts(self) -> None:
        self._timer = None
        if not self._waiters or self._closed is not None:
            return
        timeout = self.settings.request_timeout_ms / 1000.0
        oldest = min(t for _, t in self._waiters.values())
        if time.monotonic() - oldest > timeout:
            self._fail(f"no response within {timeout:.1f}s (request timeout)", timeout=True)
            return
        self._arm_timer()

    def _received(self, proto: ClientProtocol, n: int) -> None:
        """``n`` bytes came (the receiver's callback): resolve the answers they completed."""
        waiters, st = self._waiters, self.stats
        st.bytes_in += n
        try:
            answers = proto.received(n)
        except Exception as exc:  # noqa: BLE001 - a bad frame size, a decoder tripping
            self._fail(f"receive failed: {exc!r}")
            return
        for corr, resp in answers:
            entry = waiters.pop(corr, None)
            st.responses += 1
            st.answered(corr)
            if entry is not None and not entry[0].done():
                entry[0].set_result(resp)

    def _fail(self, reason: str, timeout: bool = False, closed_by_peer: bool = False) -> None:
        """Close and fail every waiting request with the reason."""
        if self._closed is None:
            self.stats.errors += 1
        for fut, _ in self._waiters.values():  # before _shut fails them more plainly
            if not fut.done():
                exc: Exception = (
                    KafkaTimeoutError(f"{self.host}:{self.port}: {reason}")
                    if timeout
                    else KafkaConnectionError(
                        self.host, self.port, reason, closed_by_peer=closed_by_peer
                    )
                )
                fut.set_exception(exc)
        self._shut(reason)

    def close(self, reason: str = "closed by the client") -> None:
        """Close the stream; requests still waiting fail with ``reason``, and a :meth:`connect`
        under way fails instead of opening the stream."""
        self._closes += 1
        if self._closed is not None and self._transport is None:
            self._closed = reason  # not connected (yet): say why a connect fails
        self._shut(reason)

    def _shut(self, reason: str) -> None:
        """Close the stream (the connection's own failures: a connect under way goes on)."""
        if self._closed is not None:
            return
        self._closed = reason
        if self.stats.state == "UP":
            self.stats.disconnects += 1
        self.stats.state = "DOWN"
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        transport = self._transport
        if transport is not None:
            if transport.get_write_buffer_size():  # bytes the broker is not reading: a
                transport.abort()  # drain() or wait_closed() waits on them
            else:
                transport.close()
        for fut, _ in self._waiters.values():
            if not fut.done():
                fut.set_exception(KafkaConnectionError(self.host, self.port, reason))
                fut.exception()  # mark retrieved: nobody may be waiting any more
        self._waiters.clear()
        self.stats.sent_at.clear()

    async def wait_closed(self) -> None:
        """Close and wait for the stream to finish closing."""
        self.close()
        if self._receiver is not None:
            await self._receiver.lost


class _Direct:
    """The connection as the handshake's transport sees it: frames written at once, never
    held (re-authentication runs while other tasks' frames wait)."""

    __slots__ = ("conn",)

    def __init__(self, conn: AIOConnection) -> None:
        self.conn = conn

    def version(self, api: Api[Any, Any], highest: int | None = None) -> int:
        return self.conn.version(api, highest)

    def send(
        self,
        api: Api[Any, Any],
        body: Any,
        version: int | None = None,
        expect_response: bool = True,
    ) -> asyncio.Future[Struct] | None:
        return self.conn._send(api, body, version, expect_response, None)

    async def request(self, api: Api[Any, Any], body: Any, version: int | None = None) -> Any:
        fut = self.send(api, body, version)
        assert fut is not None
        return await fut

    async def raw_exchange(self, token: bytes) -> bytes:
        return await self.conn.raw_exchange(token)
