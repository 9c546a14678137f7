"""Size-prefixed framing and request/response headers for both roles, without I/O.

:class:`ClientProtocol` turns requests into frame bytes and incoming bytes into
``(correlation_id, response)`` pairs; :class:`ServerProtocol` does the reverse for a
broker. A connection (or the mini-broker) feeds them bytes and writes what they return.
"""

from __future__ import annotations

import struct
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from . import fetch_one, share_one
from .errors import KafkaError, ProtocolDecodeError, UnsupportedVersionError
from .schema import Api, ReqT, Struct
from .types import NULLABLE_STRING, Parts, read_tagged_fields
from .varint import Buffer

__all__ = [
    "RequestHeader",
    "Request",
    "ClientProtocol",
    "ServerProtocol",
    "API_VERSIONS_KEY",
    "DEFAULT_MAX_FRAME",
    "RAW_CORR",
    "FrameReader",
    "Reader",
]

API_VERSIONS_KEY = 18
DEFAULT_MAX_FRAME = 100 * 1024 * 1024
_SIZE = struct.Struct(">i")
_HEADER = struct.Struct(">hhi")
_CORR = struct.Struct(">i")
#: the share APIs whose answers :mod:`share_one` reads (ShareFetch, ShareAcknowledge)
_SHARE_KEYS = frozenset((share_one.SHARE_FETCH_KEY, share_one.SHARE_ACKNOWLEDGE_KEY))


@dataclass(frozen=True)
class RequestHeader:
    """Request header v1/v2: which API and version, the correlation id and the client id."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None
    flexible: bool = False


@dataclass
class Request:
    """A request as the server sees it; ``error`` is set when its body could not be used."""

    header: RequestHeader
    body: Struct | None
    api: Api[Any, Any] | None
    error: KafkaError | None = None
    size: int = 0
    client_host: str = ""  # the peer's address, set by the server (group member hosts)
    listener: str = ""  # the name of the listener it came in on, set by the server
    session: Any = None  # the connection's security state (principal, SASL), ditto
    received: float = 0.0  # monotonic time the server read it (its request metrics)


def _encode_request_header(
    api: Api[Any, Any], version: int, corr: int, client_id: str | None
) -> Parts:
    out: Parts = [_HEADER.pack(api.key, version, corr)]
    NULLABLE_STRING.write(client_id, out)
    if api.is_flexible(version):
        out.append(b"\x00")
    return out


def _frame(parts: Parts) -> bytes:
    """Size prefix and parts joined in one copy."""
    parts.insert(0, _SIZE.pack(sum(map(len, parts))))
    return b"".join(parts)


class _Framer:
    """Cuts received bytes into complete frames, copying each frame's bytes once.

    The pieces of a frame are kept as they arrived (views of the received ``bytes``, no copy)
    and joined once it is complete: one copy per byte, where growing a buffer and slicing
    frames out of it took three (what a 10 KB-value fetch costs the asyncio consumer)."""

    def __init__(self, max_frame: int):
        self.max_frame = max_frame
        self._head = b""  # the size prefix, while incomplete
        self._need = -1  # the frame's size, once its prefix is in
        self._parts: list[memoryview] = []  # what arrived of it
        self._have = 0

    def feed(self, data: Buffer) -> list[bytes]:
        if not isinstance(data, bytes):
            data = bytes(data)  # the pieces must not change under us
        frames: list[bytes] = []
        view = memoryview(data)
        pos, end = 0, len(data)
        while pos < end:
            if self._need < 0:
                take = min(4 - len(self._head), end - pos)
                self._head += data[pos : pos + take]
                pos += take
                if len(self._head) < 4:
                    break
                n = _SIZE.unpack(self._head)[0]
                self._head = b""
                if n < 0 or n > self.max_frame:
                    raise ProtocolDecodeError(
                        f"frame size {n} is outside 0..{self.max_frame} (max frame size)"
                    )
                self._need = n
            take = min(self._need - self._have, end - pos)
            if take:
                self._parts.append(view[pos : pos + take])
                self._have += take
                pos += take
            if self._have == self._need:
                parts = self._parts
                frames.append(b"".join(parts) if len(parts) != 1 else parts[0].tobytes())
                self._parts, self._have, self._need = [], 0, -1
        return frames

    def bytes_needed(self) -> int:
        """How many more bytes complete the frame being received (4 when between frames)."""
        if self._need < 0:
            return 4 - len(self._head)
        return self._need - self._have

    @property
    def buffered(self) -> int:
        return len(self._head) if self._need < 0 else 4 + self._have


class FrameReader:
    """Cuts frames out of bytes received *into* the buffers it hands out (``recv_into``,
    asyncio's ``BufferedProtocol``): one copy out of the kernel for a large frame.

    :meth:`buffer` is where the next receive writes; :meth:`filled` says how many bytes came
    and returns the frames they completed.  Small frames are read ahead, several per receive,
    into a ``read_ahead`` buffer and sliced out of it; a frame larger than that buffer gets a
    ``bytearray`` of its own, exactly its size, which the rest of it is received into (a
    megabyte Fetch answer is never copied again after it left the kernel)."""

    def __init__(self, max_frame: int, read_ahead: int = 1 << 16) -> None:
        self.max_frame = max_frame
        self._ahead = bytearray(read_ahead)
        self._start = self._end = 0  # unread bytes: _ahead[_start:_end]
        self._frame: bytearray | None = None  # a large frame being received
        self._have = 0  # of it

    def buffer(self) -> memoryview:
        """Where the next receive writes (never empty)."""
        frame = self._frame
        if frame is not None:
            return memoryview(frame)[self._have :]
        ahead, start, end = self._ahead, self._start, self._end
        if start and len(ahead) - end < len(ahead) // 4:
            ahead[: end - start] = ahead[start:end]  # a partial frame to the front
            self._start, self._end = 0, end - start
        return memoryview(ahead)[self._end :]

    def filled(self, n: int) -> list[bytearray]:
        """``n`` bytes were received into the last :meth:`buffer`: the frames completed
        (without their size prefixes), in order.  Raises ProtocolDecodeError on a frame size
        outside 0..max_frame."""
        frame = self._frame
        if frame is not None:
            self._have += n
            if self._have < len(frame):
                return []
            self._frame = None
            return [frame]
        self._end += n
        ahead, start, end = self._ahead, self._start, self._end
        frames: list[bytearray] = []
        while end - start >= 4:
            size = _SIZE.unpack_from(ahead, start)[0]
            if size < 0 or size > self.max_frame:
                raise ProtocolDecodeError(
                    f"frame size {size} is outside 0..{self.max_frame} (max frame size)"
                )
            body = start + 4
            if end - body >= size:
                frames.append(ahead[body : body + size])
                start = body + size
                continue
            if size + 4 > len(ahead):  # larger than the read-ahead: into its own buffer
                self._frame = frame = bytearray(size)
                frame[: end - body] = ahead[body:end]
                self._have = end - body
                start = end = 0
            break
        if start == end:
            start = end = 0
        self._start, self._end = start, end
        return frames

    @property
    def buffered(self) -> int:
        """Bytes received of frames not complete yet (size prefixes included)."""
        if self._frame is not None:
            return 4 + self._have
        return self._end - self._start


#: The correlation id :meth:`ClientProtocol.receive_bytes` gives a bare answer (no header).
RAW_CORR = -1

#: A response body reader for one request (:meth:`ClientProtocol.reserve`): ``(frame, pos)``
#: -> its answer, or None to decode the body the generic way
Reader = Callable[[memoryview, int], Any]


class ClientProtocol:
    """Client side: frame requests with correlation ids, match responses back to them."""

    def __init__(self, client_id: str | None = "kclient", max_frame: int = DEFAULT_MAX_FRAME):
        self.client_id = client_id
        self._fetch_header = fetch_one.client_header(client_id)
        self._next_corr = 0
        self._pending: OrderedDict[int, tuple[Api[Any, Any], int, Reader | None]] = OrderedDict()
        self._framer = _Framer(max_frame)
        self._reader: FrameReader | None = None  # receiving by read_buffer() / received()
        self._raw = 0  # bare frames expected next (send_raw), before any response

    @property
    def in_flight(self) -> int:
        """Requests sent that still await a response."""
        return len(self._pending)

    def pending(self) -> list[int]:
        return list(self._pending)

    def send_request(
        self,
        api: Api[ReqT, Any],
        version: int,
        body: ReqT | Mapping[str, Any],
        expect_response: bool = True,
        reader: Reader | None = None,
    ) -> tuple[int, bytes]:
        """Encode a request; returns its correlation id and the frame to write (its answer's
        body goes to ``reader`` first, as :meth:`reserve` says)."""
        corr = self._next_corr
        self._next_corr = (corr + 1) & 0x7FFFFFFF
        frame = self._fetch_frame(api, version, corr, body)
        if frame is None:
            parts = _encode_request_header(api, version, corr, self.client_id)
            parts += api.encode_request(version, body)
            frame = _frame(parts)
        if expect_response:
            if reader is None and api.key in _SHARE_KEYS:  # a share consumer's answers
                reader = share_one.reader_for(api.key, version)
            self._pending[corr] = (api, version, reader)
        return corr, frame

    def _fetch_frame(self, api: Api[Any, Any], version: int, corr: int, body: Any) -> bytes | None:
        """A consumer's Fetch v12 written by :func:`fetch_one.request_frame` (every poll
        sends one), a share consumer's ShareFetch or ShareAcknowledge by
        :func:`share_one.request_frame`; None for anything else, or a body it does not know
        (the generic encoder writes it, or names what is wrong with it)."""
        if api.key in _SHARE_KEYS:
            return share_one.request_frame(api.key, version, corr, self._fetch_header, body)
        if (
            api.key != fetch_one.FETCH_KEY
            or version != fetch_one.ONE_PARTITION_VERSION
            or type(body) is not dict
            or not fetch_one.writes(body)
        ):
            return None
        try:
            return fetch_one.request_frame(corr, self._fetch_header, body)
        except (KeyError, TypeError, AttributeError, struct.error, OverflowError):
            return None

    def reserve(
        self, api: Api[Any, Any], version: int, expect_response: bool, reader: Reader | None
    ) -> int:
        """A correlation id for a request the caller frames itself (a hot path's prepared
        encoder, :mod:`kclient.protocol.produce_one`); its answer's body goes to ``reader``
        first, and is decoded the generic way when that returns None."""
        corr = self._next_corr
        self._next_corr = (corr + 1) & 0x7FFFFFFF
        if expect_response:
            self._pending[corr] = (api, version, reader)
        return corr

    def send_raw(self, token: bytes) -> bytes:
        """Frame a bare token (SASL after SaslHandshake v0: no header); its answer comes back
        from :meth:`receive_bytes` as ``(RAW_CORR, bytes)``."""
        self._raw += 1
        return _SIZE.pack(len(token)) + token

    def receive_bytes(self, data: Buffer) -> list[tuple[int, Any]]:
        """Feed received bytes; returns the responses they completed, in order (a bare answer
        to :meth:`send_raw` as ``(RAW_CORR, bytes)``)."""
        return [self._answer(frame) for frame in self._framer.feed(data)]

    def read_buffer(self) -> memoryview:
        """Where to receive the next bytes into (``recv_into``, asyncio's ``get_buffer``);
        then call :meth:`received`.  (Use one way of receiving per protocol: this one or
        :meth:`receive_bytes`.)"""
        if self._reader is None:
            self._reader = FrameReader(self._framer.max_frame)
        return self._reader.buffer()

    def received(self, n: int) -> list[tuple[int, Any]]:
        """``n`` bytes came into the last :meth:`read_buffer`: the responses they completed,
        in order, decoded in place (a Fetch answer's records are views of its frame)."""
        assert self._reader is not None, "received() before read_buffer()"
        return [self._answer(frame) for frame in self._reader.filled(n)]

    def _answer(self, frame: Buffer) -> tuple[int, Any]:
        if self._raw:
            self._raw -= 1
            return RAW_CORR, bytes(frame)
        return self.decode_frame(frame)

    def bytes_needed(self) -> int:
        return self._framer.bytes_needed()

    def take(self, corr: int, frame: memoryview) -> Any:
        """The answer to request ``corr`` in ``frame`` (a whole frame without its size prefix)
        as its reader reads it, the request then answered; None when there is no reader or it
        declines (the request stays pending for :meth:`decode_frame`)."""
        api, version, reader = self._pending[corr]
        pos = 4
        if version >= api.flexible_from and api.key != API_VERSIONS_KEY:  # (is_flexible)
            if frame[4]:  # tagged fields in the header: the generic decoding reads them
                return None
            pos = 5
        answer = None if reader is None else reader(frame, pos)
        if answer is not None:
            del self._pending[corr]
        return answer

    def decode_frame(self, frame: Buffer) -> tuple[int, Struct]:
        """Decode one complete response frame (without its size prefix)."""
        if len(frame) < 4:
            raise ProtocolDecodeError(f"response frame of {len(frame)} bytes has no header")
        corr = _CORR.unpack_from(frame, 0)[0]
        entry = self._pending.pop(corr, None)
        if entry is None:
            raise ProtocolDecodeError(f"response with unknown correlation id {corr}")
        api, version, reader = entry
        pos = 4
        if api.is_flexible(version) and api.key != API_VERSIONS_KEY:
            if len(frame) > 4 and frame[4] == 0:  # the header's usual empty tagged section
                pos = 5
            else:
                _, pos = read_tagged_fields(frame, pos)
        view = memoryview(frame)
        if reader is not None:
            answer = reader(view, pos)
            if answer is not None:
                return corr, answer
        try:
            return corr, api.decode_response(version, view, pos)
        except ProtocolDecodeError as exc:
            if api.key == API_VERSIONS_KEY and version > 0:
                # a broker answers an ApiVersions version it doesn't know with a v0 body
                # (error UNSUPPORTED_VERSION plus its ranges), as KIP-511 specifies
                return corr, api.decode_response(0, view, pos)
            raise ProtocolDecodeError(
                f"{api.name} v{version} response (correlation id {corr}): {exc}"
            ) from None


class ServerProtocol:
    """Server side: cut frames into requests (header + body), encode responses."""

    def __init__(self, apis: Mapping[int, Api[Any, Any]], max_frame: int = DEFAULT_MAX_FRAME):
        self.apis = apis
        self._framer = _Framer(max_frame)

    def receive_bytes(self, data: Buffer) -> list[Request]:
        """Feed received bytes; returns the complete requests. Raises on a bad frame size."""
        return [self.decode_frame(f) for f in self._framer.feed(data)]

    def decode_frame(self, frame: Buffer) -> Request:
        """Decode one request frame; an unknown API or version comes back with ``error`` set."""
        if len(frame) < 8:
            raise ProtocolDecodeError(f"request frame of {len(frame)} bytes has no header")
        key, version, corr = _HEADER.unpack_from(frame, 0)
        client_id, pos = NULLABLE_STRING.read(frame, 8)
        api = self.apis.get(key)
        flexible = api is not None and api.is_flexible(version)
        header = RequestHeader(key, version, corr, client_id, flexible)
        if api is None:
            return Request(
                header, None, None, UnsupportedVersionError(f"unknown api key {key}"), len(frame)
            )
        if not api.min_version <= version <= api.max_version:
            err = UnsupportedVersionError(
                f"{api.name} v{version} is not supported (v{api.min_version}-v{api.max_version})"
            )
            return Request(header, None, api, err, len(frame))
        if flexible:
            _, pos = read_tagged_fields(frame, pos)
        body = api.decode_request(version, memoryview(frame), pos)
        return Request(header, body, api, None, len(frame))

    def encode_response(
        self, header: RequestHeader, body: Any, version: int | None = None
    ) -> bytes:
        """Encode a response to ``header`` (at ``version``, default the request's) as one frame."""
        return _frame(self._response_parts(header, body, version))

    def encode_response_parts(
        self, header: RequestHeader, body: Any, version: int | None = None
    ) -> Parts:
        """Like encode_response but returns parts (size prefix first), so large Records
        values - any object with a length, such as a file region - are passed through."""
        parts = self._response_parts(header, body, version)
        return [_SIZE.pack(sum(len(p) for p in parts))] + parts

    def _response_parts(self, header: RequestHeader, body: Any, version: int | None) -> Parts:
        api = self.apis[header.api_key]
        version = header.api_version if version is None else version
        parts = [_CORR.pack(header.correlation_id)]
        if api.is_flexible(version) and api.key != API_VERSIONS_KEY:
            parts.append(b"\x00")
        parts += api.encode_response(version, body)
        return parts
