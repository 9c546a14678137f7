"""Schema Registry clients: :class:`SchemaRegistryClient` (blocking) and
:class:`AsyncSchemaRegistryClient` (asyncio), two drivers of the same calls (calls.py).

HTTP is httpx: one well-kept library with a blocking and an asyncio client of the same API,
connection pooling, TLS with client certificates and HTTP/1.1 keep-alive, so both drivers are
a few lines each.  Settings use confluent-kafka's names: ``url`` (a comma-separated list, tried
in turn when one cannot be reached), ``basic.auth.user.info`` (``user:password``; or in the
URL), ``bearer.auth.token`` (with ``bearer.auth.logical.cluster`` /
``bearer.auth.identity.pool.id``), ``ssl.ca.location``, ``ssl.certificate.location``,
``ssl.key.location``, ``ssl.key.password``, ``timeout`` (seconds), ``max.retries``,
``retries.wait.ms``, ``retries.max.wait.ms`` (backoff on 408/429/5xx) and
``cache.latest.ttl.sec``.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .calls import (
    OPERATIONS,
    UNREACHABLE,
    Call,
    HttpRequest,
    HttpResponse,
    RegistryCalls,
    Retries,
    Sleep,
)

KNOWN = frozenset(
    {
        "url",
        "basic.auth.user.info",
        "basic.auth.credentials.source",
        "bearer.auth.token",
        "bearer.auth.credentials.source",
        "bearer.auth.logical.cluster",
        "bearer.auth.identity.pool.id",
        "ssl.ca.location",
        "ssl.certificate.location",
        "ssl.key.location",
        "ssl.key.password",
        "timeout",
        "max.retries",
        "retries.wait.ms",
        "retries.max.wait.ms",
        "cache.capacity",
        "cache.latest.ttl.sec",
    }
)


def _httpx() -> Any:
    """httpx, or a clear message naming the extra that brings it."""
    try:
        import httpx
    except ImportError as exc:
        raise ImportError(
            "the schema registry client needs httpx: pip install 'kclient[schemaregistry]'"
        ) from exc
    return httpx


class _Settings:
    """A client configuration, checked once: URLs, credentials, TLS, timeouts, retries."""

    def __init__(self, conf: Mapping[str, Any] | str) -> None:
        conf = {"url": conf} if isinstance(conf, str) else dict(conf)
        unknown = sorted(set(conf) - KNOWN)
        if unknown:
            raise ValueError(
                f"unknown schema registry settings: {', '.join(unknown)} "
                f"(known: {', '.join(sorted(KNOWN))})"
            )
        urls = [u.strip().rstrip("/") for u in str(conf.get("url") or "").split(",") if u.strip()]
        if not urls:
            raise ValueError("schema registry: 'url' is required (http://host:port)")
        self.auth: tuple[str, str] | None = None
        self.urls = [self._strip_userinfo(u) for u in urls]
        if conf.get("basic.auth.user.info"):
            user, sep, password = str(conf["basic.auth.user.info"]).partition(":")
            if not sep:
                raise ValueError("basic.auth.user.info must be 'user:password'")
            self.auth = (user, password)
        self.headers = {
            "Accept": "application/vnd.schemaregistry.v1+json, "
            "application/vnd.schemaregistry+json, application/json"
        }
        if conf.get("bearer.auth.token"):
            if self.auth is not None:
                raise ValueError("basic.auth.user.info and bearer.auth.token exclude each other")
            self.headers["Authorization"] = f"Bearer {conf['bearer.auth.token']}"
            for key, header in (
                ("bearer.auth.logical.cluster", "target-sr-cluster"),
                ("bearer.auth.identity.pool.id", "Confluent-Identity-Pool-Id"),
            ):
                if conf.get(key):
                    self.headers[header] = str(conf[key])
        self.timeout = float(conf.get("timeout", 30))
        self.max_retries = int(conf.get("max.retries", 3))
        self.wait_ms = int(conf.get("retries.wait.ms", 1000))
        self.max_wait_ms = int(conf.get("retries.max.wait.ms", 20000))
        self.latest_ttl = float(conf.get("cache.latest.ttl.sec", -1))
        self.verify: Any = True
        self.cert: Any = None
        if conf.get("ssl.ca.location") or conf.get("ssl.certificate.location"):
            self.verify = self._ssl_context(conf)

    def _strip_userinfo(self, url: str) -> str:
        """``http://user:pw@host`` -> the URL without them (kept as basic auth)."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise ValueError(f"schema registry url {url!r}: http:// or https:// expected")
        if parts.username is not None:
            self.auth = (parts.username, parts.password or "")
            netloc = parts.hostname or ""
            netloc += f":{parts.port}" if parts.port else ""
            return urlunsplit(parts._replace(netloc=netloc))
        return url

    @staticmethod
    def _ssl_context(conf: Mapping[str, Any]) -> ssl.SSLContext:
        """Verification against ``ssl.ca.location``, client certificate when given."""
        context = ssl.create_default_context(cafile=conf.get("ssl.ca.location"))
        if conf.get("ssl.certificate.location"):
            context.load_cert_chain(
                conf["ssl.certificate.location"],
                conf.get("ssl.key.location"),
                conf.get("ssl.key.password"),
            )
        return context

    def client_args(self) -> dict[str, Any]:
        """Keyword arguments for httpx.Client / AsyncClient."""
        return {
            "auth": self.auth,
            "headers": self.headers,
            "timeout": self.timeout,
            "verify": self.verify,
        }


def _answer(response: Any) -> HttpResponse:
    """An httpx response as the calls expect it (JSON when it parses, else its text)."""
    try:
        body = response.json()
    except ValueError:
        body = response.text
    return HttpResponse(response.status_code, body)


def _sync(op: Callable[..., Call[Any]]) -> Callable[..., Any]:
    """A blocking method running one RegistryCalls operation."""

    def method(self: SchemaRegistryClient, *args: Any, **kwargs: Any) -> Any:
        return self.run(op(self.calls, *args, **kwargs))

    method.__name__, method.__doc__ = op.__name__, op.__doc__
    return method


def _async(op: Callable[..., Call[Any]]) -> Callable[..., Any]:
    """A coroutine method running one RegistryCalls operation."""

    async def method(self: AsyncSchemaRegistryClient, *args: Any, **kwargs: Any) -> Any:
        return await self.run(op(self.calls, *args, **kwargs))

    method.__name__, method.__doc__ = op.__name__, op.__doc__
    return method


class _Driver:
    """What both clients share: settings, calls and caches."""

    def __init__(self, conf: Mapping[str, Any] | str) -> None:
        self.settings = _Settings(conf)
        s = self.settings
        self.calls = RegistryCalls(s.latest_ttl, Retries(s.max_retries, s.wait_ms, s.max_wait_ms))
        self.url = self.settings.urls[0]

    def _urls(self) -> list[str]:
        """The URLs, starting with the one that answered last."""
        urls = self.settings.urls
        start = urls.index(self.url)
        return urls[start:] + urls[:start]

    def _failed(self, url: str, exc: Exception) -> HttpResponse:
        """``url`` could not be reached: the next one is tried first from now on."""
        urls = self.settings.urls
        self.url = urls[(urls.index(url) + 1) % len(urls)]
        return HttpResponse(UNREACHABLE, f"{url}: {type(exc).__name__}: {exc}")

    def clear_caches(self) -> None:
        """Forget every cached schema, id and latest version."""
        self.calls.clear_caches()

    def clear_latest_caches(self) -> None:
        """Forget the cached latest versions."""
        self.calls.clear_latest_caches()


class SchemaRegistryClient(_Driver):
    """A blocking Schema Registry client (confluent-kafka's method names)."""

    is_async = False

    def __init__(self, conf: Mapping[str, Any] | str) -> None:
        super().__init__(conf)
        self._http = _httpx().Client(**self.settings.client_args())

    def run(self, call: Call[Any]) -> Any:
        """Drive one call to its end: requests over HTTP, sleeps on this thread."""
        try:
            step = next(call)
            while True:
                if isinstance(step, Sleep):
                    time.sleep(step.seconds)
                    step = call.send(None)
                else:
                    step = call.send(self._send(step))
        except StopIteration as done:
            return done.value

    def _send(self, req: HttpRequest) -> HttpResponse:
        """One request, each URL tried in turn until one answers."""
        failure = HttpResponse(UNREACHABLE, "no URL")
        for url in self._urls():
            try:
                return _answer(
                    self._http.request(
                        req.method, f"{url}/{req.path}", params=req.query, json=req.body
                    )
                )
            except _httpx().TransportError as exc:
                failure = self._failed(url, exc)
        return failure

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> SchemaRegistryClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncSchemaRegistryClient(_Driver):
    """The asyncio twin of :class:`SchemaRegistryClient` (same methods, awaited)."""

    is_async = True

    def __init__(self, conf: Mapping[str, Any] | str) -> None:
        super().__init__(conf)
        self._http = _httpx().AsyncClient(**self.settings.client_args())

    async def run(self, call: Call[Any]) -> Any:
        """Drive one call to its end: requests over HTTP, sleeps on the event loop."""
        try:
            step = next(call)
            while True:
                if isinstance(step, Sleep):
                    await asyncio.sleep(step.seconds)
                    step = call.send(None)
                else:
                    step = call.send(await self._send(step))
        except StopIteration as done:
            return done.value

    async def _send(self, req: HttpRequest) -> HttpResponse:
        """One request, each URL tried in turn until one answers."""
        failure = HttpResponse(UNREACHABLE, "no URL")
        for url in self._urls():
            try:
                return _answer(
                    await self._http.request(
                        req.method, f"{url}/{req.path}", params=req.query, json=req.body
                    )
                )
            except _httpx().TransportError as exc:
                failure = self._failed(url, exc)
        return failure

    async def close(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncSchemaRegistryClient:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


for _name in OPERATIONS:
    setattr(SchemaRegistryClient, _name, _sync(getattr(RegistryCalls, _name)))
    setattr(AsyncSchemaRegistryClient, _name, _async(getattr(RegistryCalls, _name)))

__all__ = ["AsyncSchemaRegistryClient", "SchemaRegistryClient"]
