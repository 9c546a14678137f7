"""The registry's HTTP server, and its journal in the broker's compacted ``_schemas`` topic.

``RegistryServer(broker, port)`` creates ``_schemas`` (one partition, ``cleanup.policy=
compact``) when the broker has none, replays it into a :class:`SchemaStore`, and serves the
REST API (api.py) on ``127.0.0.1:port`` from a thread per request (the standard library's
``ThreadingHTTPServer``; requests are small and few).  Writes append to the topic through the
partition leader's log, so ``kclient consume _schemas`` shows them as Confluent's would.
"""

from __future__ import annotations

import base64
import hmac
import json
import logging
import threading
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from kclient.protocol.errors import TopicAlreadyExistsError
from kclient.protocol.records import build_batch

from ..state_log import read_log
from .api import handle
from .store import SchemaStore

log = logging.getLogger("kclient.broker.registry")
TOPIC = "_schemas"
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


class _Handler(BaseHTTPRequestHandler):
    """One HTTP request: JSON body in, JSON answer out."""

    server: _HttpServer
    protocol_version = "HTTP/1.1"

    def _allowed(self) -> bool:
        """HTTP basic authentication, when the server has users."""
        users = self.server.users
        if not users:
            return True
        scheme, _, token = (self.headers.get("Authorization") or "").partition(" ")
        try:
            user, _, password = base64.b64decode(token).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return False
        known = users.get(user)
        return (
            scheme.lower() == "basic"
            and known is not None
            and hmac.compare_digest(known.encode(), password.encode())
        )

    def _answer(self, status: int, answer: Any, *headers: tuple[str, str]) -> None:
        """Send one JSON answer."""
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _serve(self, method: str) -> None:
        """Parse, dispatch to api.handle, answer."""
        url = urlsplit(self.path)
        query: dict[str, Any] = {
            k: v if len(v) > 1 else v[0] for k, v in parse_qs(url.query).items()
        }
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not self._allowed():
            self._answer(
                401,
                {"error_code": 401, "message": "Unauthorized"},
                ("WWW-Authenticate", 'Basic realm="SchemaRegistry"'),
            )
            return
        try:
            body = json.loads(raw) if raw.strip() else None
        except ValueError:
            status, answer = 400, {"error_code": 400, "message": "Unrecognized JSON body"}
        else:
            status, answer = handle(self.server.store, method, url.path, query, body)
        self._answer(status, answer)

    def do_GET(self) -> None:  # noqa: N802 (http.server's names)
        self._serve("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._serve("POST")

    def do_PUT(self) -> None:  # noqa: N802
        self._serve("PUT")

    def do_DELETE(self) -> None:  # noqa: N802
        self._serve("DELETE")

    def log_message(self, format: str, *args: Any) -> None:
        """Requests go to the debug log, not stderr."""
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s %s", self.address_string(), format % args)


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True
    store: SchemaStore
    users: Mapping[str, str]


class RegistryServer:
    """The registry of one broker: its store, journal and HTTP listener."""

    def __init__(
        self,
        broker: Any,
        port: int = 0,
        host: str = "127.0.0.1",
        users: Mapping[str, str] | None = None,
    ) -> None:
        """``users``: name -> password; when given, requests need HTTP basic auth."""
        self.broker = broker
        self.users = dict(users or {})
        self.host, self.port = host, port
        self.store = SchemaStore(self._journal)
        self._http: _HttpServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://host:port`` for clients."""
        return f"http://{self.host}:{self.port}"

    def _log(self) -> Any:
        """The ``_schemas`` partition log (on whichever broker leads it)."""
        cluster = self.broker.cluster
        leader = cluster.leader(TOPIC, 0)
        owner = cluster.live.get(leader) if leader is not None else None
        if owner is None:
            raise RuntimeError(f"the registry's {TOPIC} topic has no live leader")
        found, error = owner.partition_log(TOPIC, 0)
        if found is None:
            raise RuntimeError(f"the registry's {TOPIC} topic is not readable (error {error})")
        return found

    def _journal(self, records: Sequence[tuple[bytes, bytes | None]]) -> None:
        """Append one batch of keyed records to ``_schemas``."""
        batch = build_batch([v for _, v in records], [k for k, _ in records])
        self._log().append(batch, magic=2)
        self.broker.notify_append(TOPIC, 0, len(batch))

    def start(self) -> RegistryServer:
        """Create or replay ``_schemas``, then listen."""
        if self.broker.cluster.partitions(TOPIC) is None:
            try:
                self.broker.cluster.create_topic(TOPIC, 1, {"cleanup.policy": "compact"})
            except TopicAlreadyExistsError:
                pass
        for record in read_log(self._log()):
            self.store.apply(record.key, record.value)
        self._http = _HttpServer((self.host, self.port), _Handler)
        self._http.store = self.store
        self._http.users = self.users
        self.port = self._http.server_address[1]
        self._thread = threading.Thread(
            target=self._http.serve_forever,
            daemon=True,
            name=f"kclient-schema-registry-{self.port}",
        )
        self._thread.start()
        log.info("schema registry listening on %s", self.url)
        return self

    def stop(self) -> None:
        """Stop listening (the store is rebuilt from ``_schemas`` on the next start)."""
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
        self.store = SchemaStore(self._journal)


__all__ = ["RegistryServer", "TOPIC"]
