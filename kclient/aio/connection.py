"""One broker connection on asyncio streams, driving the sans-IO :class:`ClientProtocol`.

Theory of operation: :meth:`AIOConnection.send` encodes a request into one frame and hands it
whole to ``StreamWriter.write`` - a synchronous call, so no cancellation can leave half a frame
in the stream - and returns an ``asyncio.Future`` for the response.  One reader task per
connection feeds received bytes to the protocol and resolves the futures by correlation id.
When the stream breaks (or a request times out) every waiting future fails with
:class:`KafkaConnectionError` and the connection is closed; the owner opens a new one.
Nothing here blocks the event loop or starts a thread.

TLS comes from the config's ``ssl.SSLContext`` (``asyncio.open_connection(ssl=...)``); SASL
(PLAIN, SCRAM, OAUTHBEARER over SaslHandshake v1 + SaslAuthenticate) reuses the sans-IO
mechanisms of :mod:`kclient.security.sasl`.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from kclient.connection import ConnectionSettings
from kclient.errors import (
    KafkaConnectionError,
    KafkaTimeoutError,
    SaslAuthenticationError,
    SecurityProtocolError,
    UnsupportedVersionError,
)
from kclient.metrics import ConnectionStats
from kclient.protocol import error_codes as E
from kclient.protocol.apis import API_VERSIONS, SASL_AUTHENTICATE, SASL_HANDSHAKE
from kclient.protocol.framing import ClientProtocol
from kclient.protocol.schema import Api, Struct
from kclient.protocol.versions import fallback_versions, pick_version
from kclient.security.sasl import SaslConfig, _mechanism

__all__ = ["AIOConnection"]

log = logging.getLogger(__name__)
_Req = TypeVar("_Req")
_Resp = TypeVar("_Resp")
_READ = 1 << 18


class AIOConnection:
    """A connection to one broker: pipelined requests, responses matched by correlation id."""

    def __init__(self, host: str, port: int, settings: ConnectionSettings,
                 node_id: int | None = None) -> None:
        self.host, self.port, self.node_id = host, int(port), node_id
        self.settings = settings
        self.versions: dict[int, tuple[int, int]] = {}
        self._proto = ClientProtocol(settings.client_id, settings.max_frame)
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._waiters: dict[int, tuple[asyncio.Future[Struct], float]] = {}
        self._read_task: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._closed: str | None = "not connected"
        #: count of close() calls: a connect() that sees it change was cancelled
        self._closes = 0
        self.stats = ConnectionStats(f"{self.host}:{self.port}", node_id)
        if settings.metrics is not None:
            settings.metrics.register(self.stats)

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
        security = self.settings.security
        timeout = self.settings.connect_timeout_ms / 1000.0
        closes = self._closes
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(
                self.host, self.port, ssl=security.ssl_context, limit=_READ,
                server_hostname=self.host if security.ssl_context is not None else None),
                timeout)
        except (OSError, asyncio.TimeoutError) as exc:
            self.stats.errors += 1
            self.stats.state = "DOWN"
            why = f"no answer within {timeout:.1f}s (connect.timeout.ms)" \
                if isinstance(exc, (TimeoutError, asyncio.TimeoutError)) else str(exc)
            raise KafkaConnectionError(self.host, self.port, why) from exc
        if self._closes != closes:          # close() came while we connected: it wins
            writer.transport.abort()
            raise KafkaConnectionError(self.host, self.port,
                                       f"closed while connecting: {self._closed}")
        self._reader, self._writer = reader, writer
        self._proto = ClientProtocol(self.settings.client_id, self.settings.max_frame)
        self._closed = None
        self._read_task = asyncio.get_running_loop().create_task(self._read_loop())
        try:
            await self._negotiate()
            if security.sasl is not None:
                await self._authenticate(security.sasl)
        except BaseException:
            self.close("connect failed")
            raise
        self.stats.connects += 1
        self.stats.state = "UP"
        return self

    async def _negotiate(self) -> None:
        if not self.settings.api_version_request:
            self.versions = dict(fallback_versions(self.settings.broker_version_fallback))
            return
        version = API_VERSIONS.max_version
        body = {"client_software_name": "kclient", "client_software_version": "0.1.0"}
        for _ in range(2):
            resp = await self.request(API_VERSIONS, body, version)
            ranges = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
            if resp.error_code == 0:
                self.versions = ranges
                return
            if resp.error_code == UnsupportedVersionError.errno and API_VERSIONS.key in ranges:
                version = min(ranges[API_VERSIONS.key][1], version - 1)
                continue
            break
        raise KafkaConnectionError(self.host, self.port, "ApiVersions exchange failed")

    async def _authenticate(self, cfg: SaslConfig) -> None:
        """SaslHandshake v1 + SaslAuthenticate rounds with the sans-IO mechanism."""
        def fail(reason: str) -> SaslAuthenticationError:
            return SaslAuthenticationError(self.host, self.port, reason, mechanism=cfg.mechanism)

        if SASL_AUTHENTICATE.key not in self.versions:
            raise fail("the asyncio client needs SaslAuthenticate (Kafka 1.0+); this broker "
                       "only has SaslHandshake v0")
        resp = await self.request(SASL_HANDSHAKE, {"mechanism": cfg.mechanism}, 1)
        if resp.error_code == E.IllegalSaslStateError.errno:
            raise SecurityProtocolError(self.host, self.port, "the listener does not use SASL; "
                                        "set security.protocol to match it")
        if resp.error_code:
            raise fail(f"SaslHandshake failed with error {resp.error_code} (the broker "
                       f"enables {', '.join(resp.mechanisms) or 'none'})")
        mech = _mechanism(cfg)
        token: bytes | None = mech.first()
        version = min(2, self.versions[SASL_AUTHENTICATE.key][1])
        try:
            while token is not None:
                answer = await self.request(SASL_AUTHENTICATE, {"auth_bytes": token}, version)
                if answer.error_code:
                    raise fail(answer.error_message or f"error {answer.error_code}")
                token = mech.step(bytes(answer.auth_bytes))
        except Exception as exc:
            if isinstance(exc, (SaslAuthenticationError, KafkaConnectionError)):
                raise
            raise fail(f"the broker's answer does not verify: {exc}") from exc

    def version(self, api: Api[Any, Any], highest: int | None = None) -> int:
        """The highest version of ``api`` both sides support."""
        return pick_version(api, self.versions, highest)

    def send(self, api: Api[_Req, Any], body: _Req | Mapping[str, Any],
             version: int | None = None, expect_response: bool = True
             ) -> asyncio.Future[Struct] | None:
        """Write one request now (whole, synchronously); the future of its response."""
        if self._closed is not None:
            raise KafkaConnectionError(self.host, self.port, self._closed)
        writer = self._writer
        assert writer is not None
        if version is None:
            version = self.version(api)
        corr, frame = self._proto.send_request(api, version, body, expect_response)
        writer.write(frame)
        st = self.stats
        st.requests += 1
        st.by_api[api.name] += 1
        st.bytes_out += len(frame)
        if not expect_response:
            return None
        fut: asyncio.Future[Struct] = asyncio.get_running_loop().create_future()
        now = time.monotonic()
        self._waiters[corr] = (fut, now)
        st.sent_at[corr] = (now, api.name)
        if self._timer is None:
            self._arm_timer()
        return fut

    async def request(self, api: Api[_Req, _Resp], body: _Req | Mapping[str, Any],
                      version: int | None = None) -> _Resp:
        """Send a request and await its response (typed as ``api``'s response view)."""
        fut = self.send(api, body, version)
        assert fut is not None
        return cast(_Resp, await fut)

    async def drain(self) -> None:
        """Wait while the socket's send buffer is above its high-water mark (back-pressure)."""
        writer = self._writer
        if writer is not None and self._closed is None:
            try:
                await writer.drain()
            except (OSError, RuntimeError) as exc:
                self._fail(f"send failed: {exc!r}")

    def _arm_timer(self) -> None:
        timeout = self.settings.request_timeout_ms / 1000.0
        self._timer = asyncio.get_running_loop().call_later(timeout / 4 + 0.05, self._check_timeouts)

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

    async def _read_loop(self) -> None:
        reader = self._reader
        assert reader is not None
        proto, waiters, st = self._proto, self._waiters, self.stats
        try:
            while True:
                data = await reader.read(max(_READ, proto.bytes_needed()))
                if not data:
                    self._fail("closed by the broker")
                    return
                st.bytes_in += len(data)
                for corr, resp in proto.receive_bytes(data):
                    entry = waiters.pop(corr, None)
                    st.responses += 1
                    st.answered(corr)
                    if entry is not None and not entry[0].done():
                        entry[0].set_result(resp)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - OSError, a bad frame, TLS errors
            self._fail(f"receive failed: {exc!r}")

    def _fail(self, reason: str, timeout: bool = False) -> None:
        """Close and fail every waiting request with the reason."""
        if self._closed is None:
            self.stats.errors += 1
        waiters = list(self._waiters.values())
        self.close(reason)
        for fut, _ in waiters:
            if not fut.done():
                exc: Exception = (KafkaTimeoutError(f"{self.host}:{self.port}: {reason}")
                                  if timeout else KafkaConnectionError(self.host, self.port,
                                                                       reason))
                fut.set_exception(exc)

    def close(self, reason: str = "closed by the client") -> None:
        """Close the stream; requests still waiting fail with ``reason``, and a :meth:`connect`
        under way fails instead of opening the stream."""
        self._closes += 1
        if self._closed is not None:
            if self._writer is None:        # not connected (yet): say why a connect fails
                self._closed = reason
            return
        self._closed = reason
        if self.stats.state == "UP":
            self.stats.disconnects += 1
        self.stats.state = "DOWN"
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        task, self._read_task = self._read_task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
        if self._writer is not None:
            transport = self._writer.transport
            if transport.get_write_buffer_size():   # bytes the broker is not reading: a
                transport.abort()                   # drain() or wait_closed() waits on them
            else:
                self._writer.close()
        for fut, _ in self._waiters.values():
            if not fut.done():
                fut.set_exception(KafkaConnectionError(self.host, self.port, reason))
                fut.exception()       # mark retrieved: nobody may be waiting any more
        self._waiters.clear()
        self.stats.sent_at.clear()

    async def wait_closed(self) -> None:
        """Close and wait for the stream to finish closing."""
        self.close()
        if self._writer is not None:
            try:
                await self._writer.wait_closed()
            except (OSError, RuntimeError):
                pass
