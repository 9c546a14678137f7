"""A malicious broker: a loopback proxy in front of a real broker that answers chosen APIs
badly, or cuts every connection it carries (the hostile-broker tests, the chaos harness).

Each client connection gets its own upstream connection to the real broker; requests pass
through untouched, and each response of an armed API is sent back in one of these ways:

* ``trickle``   - the real response, one byte every ``interval`` seconds;
* ``long``      - a size prefix ``extra`` bytes larger than the frame, then silence;
* ``short``     - a size prefix smaller than the frame (the rest follows as a bogus frame);
* ``wrong_corr``- the real response under another correlation id;
* ``garbage``   - the real size and correlation id around random bytes;
* ``silent``    - no answer at all.

:meth:`HostileBroker.cut` closes every connection under way (clients see a reset) and keeps
listening. The broker must advertise the proxy's address so that every connection a client
opens after bootstrapping (leaders, coordinators) goes through it.
"""

from __future__ import annotations

import contextlib
import random
import socket
import struct
import threading

from .servers import free_port

__all__ = ["HostileBroker", "MODES"]

MODES = ("pass", "trickle", "long", "short", "wrong_corr", "garbage", "silent")


class HostileBroker:
    """The proxy (see the module docstring); ``arm(mode, apis)`` picks the misbehaviour."""

    def __init__(
        self,
        upstream: tuple[str, int],
        port: int | None = None,
        interval: float = 0.5,
        extra: int = 1000,
    ) -> None:
        self.upstream = upstream
        self.port = port or free_port()
        self.interval, self.extra = interval, extra
        self.mode = "pass"
        self.apis: frozenset[int] | None = None
        self.mangled = 0
        self.accepted = 0  # client connections so far
        self._rng = random.Random(14)
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._stop = threading.Event()
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._accept, daemon=True, name="hostile-accept")

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def arm(self, mode: str, apis: set[int] | None = None) -> None:
        """Misbehave with ``mode`` on the responses of ``apis`` (API keys; None: every API)."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        self.mode, self.apis = mode, None if apis is None else frozenset(apis)

    def start(self) -> HostileBroker:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._listener.close()
        self.cut()

    def cut(self) -> int:
        """Close every connection under way, both sides (a network cut); new ones are
        accepted as before. Returns how many client connections were cut."""
        with self._lock:
            socks, self._socks = self._socks, []
        for s in socks:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
        return len(socks) // 2

    def __enter__(self) -> HostileBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- plumbing -----------------------------------------------------------------------------
    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            self.accepted += 1
            try:
                up = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                client.close()
                continue
            up.settimeout(None)
            with self._lock:
                self._socks += [client, up]
            pending: list[tuple[int, int]] = []  # (corr, api key) in request order
            cond = threading.Condition()
            threading.Thread(
                target=self._requests, args=(client, up, pending, cond), daemon=True
            ).start()
            threading.Thread(
                target=self._responses, args=(client, up, pending, cond), daemon=True
            ).start()

    def _requests(
        self,
        client: socket.socket,
        up: socket.socket,
        pending: list[tuple[int, int]],
        cond: threading.Condition,
    ) -> None:
        try:
            while True:
                frame = _read_frame(client)
                api_key, _, corr = struct.unpack_from(">hhi", frame, 4)
                with cond:
                    pending.append((corr, api_key))
                    cond.notify()
                up.sendall(frame)
        except OSError:
            _close(client, up)

    def _responses(
        self,
        client: socket.socket,
        up: socket.socket,
        pending: list[tuple[int, int]],
        cond: threading.Condition,
    ) -> None:
        try:
            while True:
                frame = _read_frame(up)
                corr = struct.unpack_from(">i", frame, 4)[0]
                with cond:
                    api_key = next((a for c, a in pending if c == corr), -1)
                    pending[:] = [(c, a) for c, a in pending if c != corr]
                if self.mode == "pass" or (self.apis is not None and api_key not in self.apis):
                    client.sendall(frame)
                else:
                    self.mangled += 1
                    self._misbehave(client, frame)
        except OSError:
            _close(client, up)

    def _misbehave(self, client: socket.socket, frame: bytes) -> None:
        mode, body = self.mode, frame[4:]
        if mode == "trickle":
            for i in range(len(frame)):
                if self._stop.wait(self.interval):
                    return
                client.sendall(frame[i : i + 1])
        elif mode == "long":
            client.sendall(struct.pack(">i", len(body) + self.extra) + body)
        elif mode == "short":
            client.sendall(struct.pack(">i", max(4, len(body) // 2)) + body)
        elif mode == "wrong_corr":
            corr = struct.unpack_from(">i", body)[0]
            client.sendall(frame[:4] + struct.pack(">i", corr + 7919) + body[4:])
        elif mode == "garbage":
            noise = bytes(self._rng.getrandbits(8) for _ in range(len(body) - 4))
            client.sendall(frame[:8] + noise)
        # silent: nothing


def _read_frame(sock: socket.socket) -> bytes:
    head = _read_exact(sock, 4)
    n = struct.unpack(">i", head)[0]
    return head + _read_exact(sock, n)


def _read_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return bytes(buf)


def _close(*socks: socket.socket) -> None:
    for s in socks:
        with contextlib.suppress(OSError):
            s.shutdown(socket.SHUT_RDWR)
