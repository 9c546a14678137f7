"""Producer and consumer configuration: one declarative table of keys, loaded and validated once.

Keys are the Kafka 0.8.2 client's (``metadata.broker.list``, ``producer.type``,
``queue.buffering.max.ms``, ``group.id``, ``auto.offset.reset``, ...), with their 0.7 names and
the newer Java/librdkafka names as aliases (``queue.time``, ``zk.connect``,
``bootstrap.servers``, ``acks``, ``retries``, ``linger.ms``, ``enable.auto.commit``, ...).

``load_config(role, config, **overrides)`` returns a read-only ``Config`` mapping of canonical
key to typed value.  Rules:

* Values may be strings (as read from a ``.properties`` file) and are coerced to the key's type;
  a bad value raises ``InvalidConfigError`` naming the key, the value and what is allowed.
* An unknown key raises ``InvalidConfigError`` naming the closest known key, except a
  kafka-python / confluent-kafka key kclient does not take (``config_foreign.py``), refused as
  "not supported by kclient; see docs/migrating.md"; a key of the other
  role (``group.id`` given to a producer) raises naming the role it belongs to.
* ``overrides`` spell dots as underscores (``producer_type="async"``) and are applied after
  ``config``: a later layer wins.  Within one layer an alias and its canonical key (or two aliases)
  naming the same setting must agree, otherwise ``InvalidConfigError``: which one was meant is
  not guessed.
* ``config["queue.time"]`` also works: lookups accept aliases; iteration yields canonical keys.

DIFFERENCES from the Kafka 0.8.2 defaults, each chosen because the old value no longer fits:

* ``request.required.acks`` 1 (0.8.2: 0).  Fire-and-forget loses messages silently; kclient
  promises that every message ends acknowledged or reported failed.
* ``queue.buffering.max.ms`` 5 ms (0.8.2: 5000 ms).  A five second linger is too long for
  request/response services; 5 ms is librdkafka's linger and still fills batches under load.
* ``batch.num.messages`` 10000 (0.8.2: 200).  Small records are cheap; bigger batches are what
  make throughput (librdkafka's default is also 10000).
* ``batch.size`` is bytes, as in every current client (Java, librdkafka, kafka-python), not 0.7's
  message count (that is ``batch.num.messages``): both limits apply to a partition batch.  The
  default 1000000 is librdkafka's.
* ``statistics.interval.ms`` (0: off) and ``stats.cb`` (alias ``stats_cb``) are librdkafka's:
  the client's ``metrics()`` as JSON to the callback every interval (docs/metrics.md).
* ``statistics.format`` ``kclient`` (the metrics() layout); ``librdkafka`` gives stats_cb
  librdkafka's STATISTICS.md layout, for dashboards built on confluent-kafka's stats.
* ``tracer.provider`` (unset: OpenTelemetry's global provider when set) gives a client its own
  OpenTelemetry tracer provider (docs/observability.md).
* ``queue.buffering.max.messages`` 100000 (0.8.2: 10000), so the queue holds several full
  batches while one is in flight (librdkafka's value).
* ``partitioner.class`` murmur2 (0.8.2: ``abs(key.hashCode) % n`` on the JVM key object).  murmur2
  over the key bytes is what the Java client, librdkafka and kafka-python use, so all of them agree
  on a key's partition.  ``kafka.producer.DefaultPartitioner`` still names the old behaviour
  (``kclient.partitioner.JavaHashPartitioner``).
* ``offsets.storage`` is ``kafka`` when no ``zookeeper.connect`` is given (0.8.2: always
  ``zookeeper``), since then there is no ZooKeeper to store offsets in.
* ``dual.commit.enabled`` defaults to true only if offsets are stored in Kafka *and* ZooKeeper is
  configured (0.8.2: whenever offsets are stored in Kafka).
* ``message.max.bytes`` (producer) 1000012, Kafka's broker default, checked before a message is
  queued (0.8 producer: no such check; 0.7's ``max.message.size`` was 1000000).
* Keys the 0.8.2 clients did not have take the defaults of the clients that introduced them:
  ``session.timeout.ms`` 30000 and ``heartbeat.interval.ms`` 3000 (Java consumer 0.9),
  ``api.version.request`` true and ``broker.version.fallback`` 0.10.0 (librdkafka),
  ``connect.timeout.ms`` 10000, ``delivery.timeout.ms`` 120000 (KIP-91, Java 2.1).
* ``enable.idempotence`` false (Java 3.0+: true): off as the 0.8 API has it, since it needs
  acks=all and a 0.11+ broker; ``transactional.id`` unset and ``transaction.timeout.ms`` 60000
  as in Java.
* ``isolation.level`` read_uncommitted, as in Java (0.8 had no transactions).
* ``fetch.max.bytes`` 50 MiB, as in Java (KIP-74; 0.8 bounded fetches per partition only).
* ``max.poll.records`` 500, as in Java (0.8 had no poll loop; only kclient.Consumer reads it).
* ``group.protocol`` classic, ``group.remote.assignor`` and ``client.rack`` unset, as in Java
  (KIP-848's consumer protocol is opt-in there too; 0.8 had no broker-coordinated groups).
* ``metadata.recovery.strategy`` rebootstrap and ``metadata.recovery.rebootstrap.trigger.ms``
  300000, as in Kafka 4's Java client (KIP-899, KIP-1102; 0.8 never went back to the bootstrap
  list).
* ``socket.receive.buffer.bytes`` 0: the kernel's auto-tuned receive buffer, as librdkafka
  (0.8 and Java: 65536, which caps a fetch's TCP window and splits it into many small reads).
"""

from __future__ import annotations

import difflib
import ssl
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from kclient.config_foreign import foreign_message
from kclient.config_types import (
    DECODERS,
    ENCODERS,
    PARTITIONERS,
    BadValue,
    Bool,
    Choice,
    ClassRef,
    Encoding,
    HostPorts,
    Instance,
    Int,
    Str,
    Strategies,
    StrList,
    Version,
    ZkConnect,
)
from kclient.errors import InvalidConfigError
from kclient.protocol.compression import CODEC_NAMES
from kclient.protocol.versions import DEFAULT_BROKER_VERSION_FALLBACK

__all__ = [
    "Config",
    "ConfigKey",
    "load_config",
    "consumer_config",
    "describe_keys",
    "keys_markdown",
    "ROLES",
]

ROLES = ("producer", "consumer")
_BOTH = frozenset(ROLES)
_P = frozenset({"producer"})
_C = frozenset({"consumer"})


# --------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class Derived:
    """A default computed from other settings (as the 0.8.2 client derived some)."""

    compute: Callable[[Mapping[str, Any]], Any]
    text: str


@dataclass(frozen=True)
class ConfigKey:
    """One configuration key: canonical name, default, type, roles, aliases, doc."""

    name: str
    default: Any
    type: Any
    roles: frozenset[str]
    doc: str
    aliases: tuple[str, ...] = ()
    differs: str = ""

    @property
    def default_text(self) -> str:
        """The default as documentation shows it."""
        if isinstance(self.default, Derived):
            return self.default.text
        if self.default is None:
            return "(none)"
        if isinstance(self.default, bool):
            return str(self.default).lower()
        return ",".join(self.default) if isinstance(self.default, tuple) else str(self.default)

    @property
    def role_text(self) -> str:
        """``producer``, ``consumer`` or ``common``."""
        return "common" if self.roles == _BOTH else next(iter(self.roles))


def _key(
    name: str,
    default: Any,
    type_: Any,
    roles: frozenset[str],
    doc: str,
    *aliases: str,
    differs: str = "",
) -> ConfigKey:
    """Shorthand for one table row."""
    return ConfigKey(name, default, type_, roles, doc, tuple(aliases), differs)


_MS = Int(min=0)
_SER = ClassRef("to_message", ENCODERS, plain_callable=True)
_DESER = ClassRef("from_message", DECODERS, plain_callable=True)
_POS = Int(min=1)
_CODECS = tuple(CODEC_NAMES[i] for i in sorted(CODEC_NAMES))  # none, gzip, snappy, lz4, zstd
_CODEC_IDS: dict[int | str, str] = {
    **dict(enumerate(_CODECS)),
    **{str(i): c for i, c in enumerate(_CODECS)},
}

_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_PEM = Choice(("PEM",), {"pem": "PEM"})
_SASL = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI")

# fmt: off
KEYS: tuple[ConfigKey, ...] = (
    # ---- common to producer and consumer
    _key("metadata.broker.list", None, HostPorts(), _BOTH,
         "Bootstrap brokers host:port,...; used for metadata only.",
         "bootstrap.servers", "broker.list"),
    _key("zookeeper.connect", None, ZkConnect(), _BOTH,
         "ZooKeeper host:port,...[/chroot]: broker discovery and consumer coordination.",
         "zk.connect"),
    _key("zookeeper.session.timeout.ms", 6000, _POS, _BOTH,
         "ZooKeeper session timeout.", "zk.sessiontimeout.ms"),
    _key("zookeeper.connection.timeout.ms", Derived(
        lambda c: c["zookeeper.session.timeout.ms"], "zookeeper.session.timeout.ms"), _POS, _BOTH,
         "Longest wait to establish a ZooKeeper connection.", "zk.connectiontimeout.ms"),
    # ZooKeeper security (kclient.zkutils.kazoo_options): Kafka's zookeeper.ssl.* (KIP-515) and
    # zookeeper.set.acl names; digest credentials as ZooKeeper's "addauth digest user:password"
    _key("zookeeper.ssl.client.enable", False, Bool(), _BOTH,
         "Connect to ZooKeeper over TLS (its secureClientPort)."),
    _key("zookeeper.ssl.truststore.location", None, Str(), _BOTH,
         "CA certificates (PEM) the ZooKeeper server certificate must chain to; unset: the "
         "system's trust store."),
    _key("zookeeper.ssl.truststore.type", "PEM", _PEM, _BOTH,
         "Format of zookeeper.ssl.truststore.location: PEM only."),
    _key("zookeeper.ssl.keystore.location", None, Str(), _BOTH,
         "Client certificate and private key (one PEM file) for a ZooKeeper that asks for "
         "client certificates."),
    _key("zookeeper.ssl.keystore.password", None, Str(), _BOTH,
         "Password of an encrypted private key in zookeeper.ssl.keystore.location."),
    _key("zookeeper.ssl.keystore.type", "PEM", _PEM, _BOTH,
         "Format of zookeeper.ssl.keystore.location: PEM only."),
    _key("zookeeper.ssl.endpoint.identification.algorithm", "https",
         Choice(("https", "none"), {"": "none", "HTTPS": "https"}), _BOTH,
         "https: the ZooKeeper certificate must name the host connected to; none: any name."),
    _key("zookeeper.digest", None, Str(), _BOTH,
         "user:password authenticating to ZooKeeper with its digest scheme (as zkCli's "
         "addauth digest).", "zookeeper.auth.digest"),
    _key("zookeeper.set.acl", False, Bool(), _BOTH,
         "Create znodes with Kafka's secure ACLs: all rights for the creator (needs "
         "zookeeper.digest), read for everyone."),
    _key("client.id", Derived(lambda c: c.get("group.id") or "", "group.id (consumer), empty"),
         Str(), _BOTH, "Client name sent with every request (logs, quotas)."),
    _key("socket.timeout.ms", 30000, _POS, _BOTH, "Network request timeout."),
    _key("connect.timeout.ms", 10000, _POS, _BOTH, "Longest wait for a TCP connection.",
         differs="no such key (0.7: 5000)"),
    _key("socket.receive.buffer.bytes", 0, Int(min=0), _BOTH,
         "TCP receive buffer (SO_RCVBUF); 0 leaves the kernel's auto-tuning, which lets a large "
         "fetch arrive in fewer, larger reads.", "socket.buffersize", "receive.buffer.bytes",
         differs="65536 (0 is the kernel's default here, as librdkafka's)"),
    _key("socket.send.buffer.bytes", 102400, _POS, _BOTH,
         "TCP send buffer (SO_SNDBUF).", "send.buffer.bytes", "buffer.size"),
    _key("retry.backoff.ms", 100, _MS, _BOTH, "Pause before retrying after a failure, before "
         "refreshing metadata."),
    _key("topic.metadata.refresh.interval.ms", 600000, Int(), _BOTH,
         "Periodic metadata refresh (also refreshed on errors); negative: only on errors.",
         "metadata.max.age.ms"),
    _key("topic.metadata.propagation.max.ms", 30000, _MS, _P,
         "Longest wait for a topic the metadata does not show yet (being created: "
         "UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE) before its messages fail; the wait "
         "does not count against message.send.max.retries (librdkafka's key; Java waits "
         "max.block.ms)."),
    _key("metadata.recovery.strategy", "rebootstrap", Choice(("none", "rebootstrap")), _BOTH,
         "When no known broker gives metadata: rebootstrap asks metadata.broker.list again "
         "(KIP-899); none keeps to the known brokers.", differs="no such key; Kafka 4's default"),
    _key("metadata.recovery.rebootstrap.trigger.ms", 300000, _MS, _BOTH,
         "With rebootstrap: go back to metadata.broker.list once no known broker has given "
         "metadata for this long (KIP-1102).", differs="no such key; Kafka 4's default"),
    _key("api.version.request", True, Bool(), _BOTH,
         "Ask the broker for its API versions on connect (false for 0.8/0.9 brokers).",
         differs="no such key; librdkafka's default"),
    _key("broker.version.fallback", DEFAULT_BROKER_VERSION_FALLBACK, Version(), _BOTH,
         "Broker version assumed when api.version.request is false or fails.",
         differs="no such key; librdkafka's default"),
    _key("serializer.encoding", "utf-8", Encoding(), _BOTH,
         "Text encoding of StringEncoder/StringDecoder (0.8's UTF8)."),
    _key("statistics.interval.ms", 0, _MS, _BOTH,
         "Every this many ms, call stats.cb with the client's metrics() as JSON (0: never), "
         "as librdkafka does.", differs="no such key; librdkafka's"),
    _key("stats.cb", None, ClassRef("__call__"), _BOTH,
         "Callable(json_text) called every statistics.interval.ms with metrics() as JSON "
         "(confluent-kafka's stats_cb).", "stats_cb", differs="no such key"),
    _key("statistics.format", "kclient", Choice(("kclient", "librdkafka")), _BOTH,
         "Layout of the stats_cb JSON: kclient's metrics() (docs/metrics.md), or librdkafka's "
         "STATISTICS.md for the fields kclient has (docs/observability.md).",
         differs="no such key"),
    _key("tracer.provider", None, ClassRef("get_tracer"), _BOTH,
         "OpenTelemetry TracerProvider whose tracer makes this client's spans (unset: the "
         "global one when set; a NoOpTracerProvider switches tracing off); see "
         "docs/observability.md.",
         differs="no such key"),
    # ---- security (docs/security.md): Java's and librdkafka's names
    _key("security.protocol", "PLAINTEXT", Choice(_PROTOCOLS, {p.lower(): p for p in _PROTOCOLS}),
         _BOTH, "Transport to the brokers: PLAINTEXT, SSL (TLS), SASL_PLAINTEXT or SASL_SSL."),
    _key("ssl.ca.location", None, Str(), _BOTH,
         "CA certificates (PEM file, or a directory of hashed PEM files) that broker "
         "certificates must chain to; unset: the system's trust store.",
         "ssl.truststore.location", "ssl.cafile"),
    _key("ssl.truststore.type", "PEM", _PEM, _BOTH,
         "Format of ssl.ca.location: PEM only (convert a JKS store with keytool -exportcert)."),
    _key("ssl.certificate.location", None, Str(), _BOTH,
         "Client certificate chain (PEM; may hold the private key too), for listeners with "
         "ssl.client.auth.", "ssl.keystore.location", "ssl.certfile"),
    _key("ssl.key.location", None, Str(), _BOTH,
         "Client private key (PEM), if not in ssl.certificate.location.", "ssl.keyfile"),
    _key("ssl.key.password", None, Str(), _BOTH,
         "Password of an encrypted client private key.", "ssl.password"),
    _key("ssl.keystore.type", "PEM", _PEM, _BOTH,
         "Format of ssl.certificate.location: PEM only."),
    _key("ssl.endpoint.identification.algorithm", "https",
         Choice(("https", "none"), {"": "none"}), _BOTH,
         "https: the broker certificate must name the host connected to; none (or empty): "
         "any host name (the chain is still verified)."),
    _key("enable.ssl.certificate.verification", True, Bool(), _BOTH,
         "false: accept any broker certificate (tests only: anyone can pose as the broker)."),
    _key("ssl.cipher.suites", None, Str(), _BOTH,
         "OpenSSL cipher list for TLS 1.2 (e.g. ECDHE+AESGCM); unset: OpenSSL's default.",
         "ssl.ciphers"),
    _key("ssl.enabled.protocols", ("TLSv1.2", "TLSv1.3"), StrList(), _BOTH,
         "TLS versions allowed (TLSv1.2, TLSv1.3); the lowest is the floor."),
    _key("ssl.context", None, Instance(ssl.SSLContext), _BOTH,
         "An ssl.SSLContext built by the caller; replaces every other ssl.* key."),
    _key("sasl.mechanism", None, Choice(_SASL, {m.lower(): m for m in _SASL}), _BOTH,
         "SASL mechanism: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER (GSSAPI is "
         "refused: not supported).", "sasl.mechanisms"),
    _key("sasl.username", None, Str(), _BOTH, "SASL user name (PLAIN, SCRAM).",
         "sasl.user", "sasl.plain.username"),
    _key("sasl.password", None, Str(), _BOTH, "SASL password (PLAIN, SCRAM).",
         "sasl.plain.password"),
    _key("sasl.jaas.config", None, Str(), _BOTH,
         "Java's JAAS line, e.g. org.apache.kafka.common.security.plain.PlainLoginModule "
         "required username=\"u\" password=\"p\"; its username/password are used."),
    _key("sasl.oauthbearer.token.callback", None, ClassRef("__call__"), _BOTH,
         "OAUTHBEARER: callable(sasl.oauthbearer.config) returning the token, or (token, "
         "expiry seconds since the epoch) as confluent-kafka's oauth_cb.", "oauth_cb"),
    _key("sasl.oauthbearer.config", None, Str(), _BOTH,
         "Text handed to the OAUTHBEARER token callback."),
    _key("reconnect.backoff.max.ms", 1000, _MS, _BOTH,
         "After an authentication failure, the broker is not tried again for this long (the "
         "failure is raised again): no retry storm with a wrong password."),
    # ---- producer
    _key("producer.type", "sync", Choice(("sync", "async")), _P,
         "sync: send() waits for acks; async: a background thread sends batches."),
    _key("request.required.acks", 1, Choice((-1, 0, 1), {"all": -1}), _P,
         "Acks the leader waits for: 0 none, 1 leader, -1/all all in-sync replicas.", "acks",
         differs="0"),
    _key("request.timeout.ms", 10000, _POS, _P,
         "How long the broker may wait for the required acks; the client waits for the whole "
         "response 1 s longer (unless socket.timeout.ms is set).", "timeout.ms"),
    _key("delivery.timeout.ms", Derived(
        lambda c: max(120000, c["queue.buffering.max.ms"] + c["request.timeout.ms"]),
        "120000 (at least queue.buffering.max.ms + request.timeout.ms)"), _POS, _P,
         "Longest time from send() to a message's report (KIP-91): a message still unsent or "
         "unacknowledged then fails with KafkaTimeoutError. At least queue.buffering.max.ms + "
         "request.timeout.ms.",
         differs="no such key; KIP-91's (Java 2.1) default"),
    _key("serializer.class", "kclient.encoders.DefaultEncoder", _SER, _P,
         "Encoder for message values: an Encoder, or a plain callable (value -> bytes).",
         "value.serializer"),
    _key("key.serializer.class", Derived(lambda c: c["serializer.class"], "serializer.class"),
         _SER, _P, "Encoder for keys: an Encoder, or a plain callable (key -> bytes).",
         "key.serializer"),
    _key("partitioner.class", "kclient.partitioner.DefaultPartitioner",
         ClassRef("partition", PARTITIONERS), _P, "Partitioner for keyed messages.",
         "partitioner", differs="abs(key.hashCode) % n (JavaHashPartitioner)"),
    _key("event.handler", None, ClassRef(), _P,
         "EventHandler: serialize, partition, group by broker, compress, send with retries."),
    _key("callback.handler", None, ClassRef(), _P,
         "CallbackHandler with hooks at each stage of the async queue."),
    _key("compression.codec", "none",
         Choice(_CODECS, _CODEC_IDS),
         _P, "Compression of message sets: none, gzip, snappy, lz4, zstd (or 0-4).",
         "compression.type"),
    _key("compressed.topics", (), StrList(), _P,
         "Topics to compress when a codec is set; empty means all topics."),
    _key("max.in.flight.requests.per.connection", 5, _POS, _P,
         "Produce requests pipelined per broker connection (Java/librdkafka name; 0.8.2 sent "
         "one at a time).", "max.in.flight"),
    _key("enable.idempotence", False, Bool(), _P,
         "Idempotent producer (KIP-98): a producer id and per-partition sequence numbers make "
         "retries write each message once, in order. Needs acks=all, retries > 0 and "
         "max.in.flight.requests.per.connection <= 5; brokers 0.11+.",
         differs="no such key; off as in the 0.8 API (Java 3.0+ turns it on)"),
    _key("transactional.id", None, Str(), _P,
         "Transactional producer: the id that fences older instances and resumes or aborts "
         "their transactions (implies enable.idempotence).",
         differs="no such key"),
    _key("transaction.timeout.ms", 60000, _POS, _P,
         "Longest a transaction may stay open before the coordinator aborts it.",
         differs="no such key; Java's default"),
    _key("message.send.max.retries", 3, _MS, _P,
         "Retries of a failed send before the message is reported failed.",
         "retries", "num.retries"),
    _key("queue.buffering.max.ms", 5, _MS, _P,
         "Async: longest time a message waits in the queue for its batch.",
         "queue.time", "linger.ms", differs="5000"),
    _key("queue.buffering.max.messages", 100000, _POS, _P,
         "Async: capacity of the send queue, in messages.", "queue.size",
         differs="10000"),
    _key("queue.enqueue.timeout.ms", -1, Int(min=-1), _P,
         "Async, queue full: -1 block, 0 raise QueueFullError at once, >0 wait then raise."),
    _key("batch.num.messages", 10000, _POS, _P,
         "Most messages in one batch (a count; 0.7 called it batch.size).", differs="200"),
    _key("batch.size", 1000000, _POS, _P,
         "Most bytes of records in one partition batch (keys and values plus ~12 bytes each; "
         "a larger record goes alone), as in Java and librdkafka; batch.num.messages also "
         "applies.", differs="no such key (0.7: a message count, now batch.num.messages)"),
    _key("message.max.bytes", 1000012, _POS, _P,
         "Largest message accepted by send(); larger ones fail before queueing.",
         "max.message.size", differs="no such check; 1000012 is the broker's default"),
    # ---- consumer
    _key("group.id", None, Str(), _C, "Consumer group name.", "groupid"),
    _key("consumer.id", None, Str(), _C,
         "Consumer id in the group; generated (host-time-uuid) if unset.", "consumerid"),
    _key("zookeeper.sync.time.ms", 2000, _MS, _C,
         "How far a ZooKeeper follower may lag the leader.", "zk.synctime.ms"),
    _key("fetch.message.max.bytes", 1048576, _POS, _C,
         "Bytes fetched per partition per request; bounds the largest readable message.",
         "fetch.size", "max.partition.fetch.bytes"),
    _key("fetch.max.bytes", 52428800, _POS, _C,
         "Most bytes one Fetch response carries over all its partitions (Fetch v3+; the first "
         "record batch is returned whole even if larger).",
         differs="no such key (Java consumer 0.10.1's, KIP-74)"),
    _key("fetch.min.bytes", 1, _MS, _C, "Least data the broker returns for a fetch."),
    _key("fetch.wait.max.ms", 100, _MS, _C,
         "Longest the broker blocks a fetch waiting for fetch.min.bytes.", "fetch.max.wait.ms"),
    _key("num.consumer.fetchers", 1, _POS, _C, "Fetcher threads."),
    _key("queued.max.message.chunks", 2, _POS, _C,
         "Fetched chunks buffered per stream (memory bound).", "queuedchunks.max"),
    _key("auto.commit.enable", True, Bool(), _C,
         "Commit consumed offsets periodically.", "enable.auto.commit", "autocommit.enable"),
    _key("auto.commit.interval.ms", 60000, _POS, _C,
         "Period of automatic offset commits.", "autocommit.interval.ms"),
    _key("auto.offset.reset", "largest",
         Choice(("smallest", "largest", "none"), {"earliest": "smallest", "latest": "largest"}),
         _C, "No or out-of-range offset: smallest, largest, or none (raise).",
         "autooffset.reset"),
    _key("isolation.level", "read_uncommitted",
         Choice(("read_uncommitted", "read_committed")), _C,
         "read_committed: fetch only up to the last stable offset and leave out aborted "
         "transactions' messages; read_uncommitted: everything (transaction markers are never "
         "delivered either way).", differs="no such key (0.8 has no transactions)"),
    _key("max.poll.records", 500, _POS, _C,
         "kclient.Consumer: most records one poll() returns.",
         differs="no such key (Java consumer 0.10's)"),
    _key("consumer.timeout.ms", -1, Int(min=-1), _C,
         "-1 iteration blocks; else raise ConsumerTimeoutError after this long without data."),
    _key("consumer.skip.corrupt", False, Bool(), _C,
         "A corrupt record (bad CRC, malformed batch): false - the stream raises "
         "CorruptRecordError (topic, partition, offset) once, then goes on after it; true - "
         "log it, count it and go on."),
    _key("rebalance.max.retries", 4, _MS, _C,
         "Attempts of a rebalance before ConsumerRebalanceFailedError.", "rebalance.retries.max"),
    _key("rebalance.backoff.ms", Derived(lambda c: c["zookeeper.sync.time.ms"],
                                         "zookeeper.sync.time.ms"), _MS, _C,
         "Pause between rebalance attempts."),
    _key("refresh.leader.backoff.ms", 200, _MS, _C,
         "Pause before looking for a new leader of a partition."),
    _key("exclude.internal.topics", True, Bool(), _C,
         "Keep internal topics (__consumer_offsets) out of wildcard subscriptions."),
    _key("partition.assignment.strategy", "range", Strategies(), _C,
         "How partitions are spread over the group's streams: range, roundrobin or "
         "cooperative-sticky (incremental rebalances, KIP-429; broker-coordinated groups), "
         "or a preference list."),
    _key("group.instance.id", None, Str(), _C,
         "Static membership (KIP-345, broker-coordinated groups): a stable id per consumer "
         "process; a restart within session.timeout.ms rejoins without a rebalance, and "
         "close() does not leave the group."),
    _key("offsets.storage", Derived(lambda c: "zookeeper" if c["zookeeper.connect"] else "kafka",
                                    "zookeeper if zookeeper.connect is set, else kafka"),
         Choice(("zookeeper", "kafka")), _C, "Where offsets are committed.",
         differs="zookeeper"),
    _key("dual.commit.enabled", Derived(
        lambda c: c["offsets.storage"] == "kafka" and bool(c["zookeeper.connect"]),
        "true if offsets.storage=kafka and zookeeper.connect is set"), Bool(), _C,
         "Also commit to ZooKeeper while migrating offsets to Kafka.",
         differs="true whenever offsets.storage=kafka"),
    _key("offsets.channel.backoff.ms", 1000, _MS, _C,
         "Pause before reconnecting to the offset manager."),
    _key("offsets.channel.socket.timeout.ms", 10000, _POS, _C,
         "Socket timeout of offset commit/fetch requests."),
    _key("offsets.commit.max.retries", 5, _MS, _C, "Retries of a failed offset commit."),
    _key("session.timeout.ms", 30000, _POS, _C,
         "Broker-coordinated groups: a member silent this long is removed.",
         differs="no such key; Java consumer 0.9's default"),
    _key("heartbeat.interval.ms", 3000, _POS, _C,
         "Broker-coordinated groups: heartbeat period (below session.timeout.ms).",
         differs="no such key; Java consumer 0.9's default"),
    _key("group.protocol", "classic", Choice(("classic", "consumer")), _C,
         "kclient.Consumer / AIOConsumer / broker-coordinated ConsumerConnector groups: "
         "classic (JoinGroup / SyncGroup, client-side assignors) or consumer (KIP-848: "
         "ConsumerGroupHeartbeat, the broker assigns; Kafka 4.0+; a connector is one member "
         "and spreads its partitions over its streams). Under consumer, "
         "partition.assignment.strategy, session.timeout.ms and heartbeat.interval.ms cannot "
         "be set, as in Java.",
         differs="no such key (Java consumer 3.7's)"),
    _key("group.remote.assignor", None, Str(), _C,
         "group.protocol=consumer: the broker-side assignor to ask for (uniform, range); "
         "unset: the broker's default.", differs="no such key (Java consumer 3.7's)"),
    _key("client.rack", None, Str(), _C,
         "group.protocol=consumer: this consumer's rack, sent to the coordinator for "
         "rack-aware assignors.", differs="no such key (Java consumer 2.4's)"),
    _key("key.decoder.class", "kclient.encoders.DefaultDecoder",
         _DESER, _C, "Decoder for keys: a Decoder, or a plain callable (bytes -> key).",
         "key.deserializer"),
    _key("value.decoder.class", "kclient.encoders.DefaultDecoder",
         _DESER, _C, "Decoder for values: a Decoder, or a plain callable (bytes -> value).",
         "value.deserializer"),
)
# fmt: on

_BY_NAME: dict[str, ConfigKey] = {k.name: k for k in KEYS}
_ALIASES: dict[str, str] = {a: k.name for k in KEYS for a in k.aliases}


def _cross_checks(role: str, values: Mapping[str, Any]) -> None:
    """Rules that involve two keys."""
    if role == "consumer":
        hb, session = values["heartbeat.interval.ms"], values["session.timeout.ms"]
        if hb >= session:
            raise InvalidConfigError(
                f"heartbeat.interval.ms ({hb}) must be lower than session.timeout.ms ({session})",
                "heartbeat.interval.ms",
                hb,
                f"less than {session}",
            )
    if role == "producer":
        _check_delivery_timeout(values)
        _check_idempotence(values)
        batch, queue = values["batch.num.messages"], values["queue.buffering.max.messages"]
        if batch > queue:
            raise InvalidConfigError(
                f"batch.num.messages ({batch}) must not exceed "
                f"queue.buffering.max.messages ({queue})",
                "batch.num.messages",
                batch,
                f"at most {queue}",
            )


def _check_idempotence(values: Mapping[str, Any]) -> None:
    """The Java producer's rules for enable.idempotence (and transactional.id, which needs it)."""
    if not (values["enable.idempotence"] or values["transactional.id"]):
        return
    why = "enable.idempotence" if values["enable.idempotence"] else "transactional.id"
    acks = values["request.required.acks"]
    if acks != -1:
        raise InvalidConfigError(
            f"{why} needs request.required.acks (acks) = all (-1), not {acks}: an idempotent "
            "producer must know the broker kept each batch",
            "request.required.acks",
            acks,
            "all (-1)",
        )
    retries = values["message.send.max.retries"]
    if retries == 0:
        raise InvalidConfigError(
            f"{why} needs message.send.max.retries (retries) > 0: idempotence exists to make "
            "retries safe",
            "message.send.max.retries",
            retries,
            "at least 1",
        )
    inflight = values["max.in.flight.requests.per.connection"]
    if inflight > 5:
        raise InvalidConfigError(
            f"{why} needs max.in.flight.requests.per.connection <= 5 (the batches a broker "
            f"remembers per producer), not {inflight}",
            "max.in.flight.requests.per.connection",
            inflight,
            "1 to 5",
        )


def _check_delivery_timeout(values: Mapping[str, Any]) -> None:
    """KIP-91, as the Java producer checks it: a message must be able to wait out its linger
    and one request before its delivery time runs out."""
    delivery = values["delivery.timeout.ms"]
    floor = values["queue.buffering.max.ms"] + values["request.timeout.ms"]
    if delivery < floor:
        raise InvalidConfigError(
            f"delivery.timeout.ms ({delivery}) must be at least queue.buffering.max.ms + "
            f"request.timeout.ms ({floor})",
            "delivery.timeout.ms",
            delivery,
            f"at least {floor}",
        )


# --------------------------------------------------------------------------- loading


class Config(Mapping[str, Any]):
    """Read-only, validated settings of one role; lookups accept canonical names and aliases."""

    def __init__(self, role: str, values: Mapping[str, Any], explicit: frozenset[str]) -> None:
        """Use ``load_config`` rather than this."""
        self.role = role
        self._values = MappingProxyType(dict(values))
        self._explicit = explicit

    def __getitem__(self, key: str) -> Any:
        """The value of a canonical key or alias."""
        name = _ALIASES.get(key, key)
        try:
            return self._values[name]
        except KeyError:
            raise KeyError(f"{key!r} is not a {self.role} config key") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        given = {k: self._values[k] for k in sorted(self._explicit)}
        return f"Config({self.role!r}, {given!r})"

    def is_set(self, key: str) -> bool:
        """Whether ``key`` was given explicitly (rather than defaulted)."""
        return _ALIASES.get(key, key) in self._explicit

    def require(self, *keys: str) -> None:
        """Raise InvalidConfigError unless every key has a value."""
        for key in keys:
            if self[key] is None:
                raise InvalidConfigError(f"missing required {self.role} config {key!r}", key)

    def require_one_of(self, *keys: str) -> None:
        """Raise InvalidConfigError unless at least one key has a value."""
        if all(self[key] is None for key in keys):
            names = " or ".join(repr(k) for k in keys)
            raise InvalidConfigError(f"the {self.role} needs {names}", keys[0])

    def create(self, key: str, *args: Any, **kwargs: Any) -> Any:
        """An instance for a class-valued key: the class called with args, or the object as is."""
        value = self[key]
        return value(*args, **kwargs) if isinstance(value, type) else value


def load_config(role: str, config: Mapping[str, Any] | None = None, **overrides: Any) -> Config:
    """Validate ``config`` then ``overrides`` (``a_b`` means ``a.b``) into a read-only Config."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
    given: dict[str, Any] = {}
    for layer in (config or {}, {k.replace("_", "."): v for k, v in overrides.items()}):
        given.update(_layer(role, layer))
    values = {name: given[name] for name in given}
    for spec in KEYS:
        if role in spec.roles and spec.name not in values and not isinstance(spec.default, Derived):
            values[spec.name] = _coerce(spec, spec.default, spec.name)
    for spec in KEYS:
        if role in spec.roles and spec.name not in values:
            values[spec.name] = spec.default.compute(values)
    _cross_checks(role, values)
    order = [k.name for k in KEYS if k.name in values]
    return Config(role, {name: values[name] for name in order}, frozenset(given))


#: keys of the classic group protocol only: refused under group.protocol=consumer, in Java's order
CLASSIC_ONLY = ("partition.assignment.strategy", "heartbeat.interval.ms", "session.timeout.ms")


def check_group_protocol(conf: Config) -> None:
    """Under group.protocol=consumer, refuse the classic protocol's keys when set (Java's
    ConsumerConfig does, with these words)."""
    if conf["group.protocol"] != "consumer":
        return
    classic_only = [k for k in CLASSIC_ONLY if conf.is_set(k)]
    if classic_only:
        raise InvalidConfigError(
            f"{', '.join(classic_only)} cannot be set when group.protocol=CONSUMER",
            classic_only[0],
            conf[classic_only[0]],
        )


def consumer_config(
    topics: tuple[Any, ...], config: Mapping[str, Any], refused: Mapping[str, str] | None = None
) -> tuple[Config, tuple[Any, ...]]:
    """A consumer's Config and topics from its ``(*topics, **config)`` arguments (a leading
    mapping is the configuration); a key in ``refused`` that is set raises with its reason,
    then ``metadata.broker.list`` is required."""
    given: Mapping[str, Any] | None = None
    if topics and isinstance(topics[0], Mapping):
        given, topics = topics[0], topics[1:]
    conf = load_config("consumer", given, **config)
    check_group_protocol(conf)
    for key, why in (refused or {}).items():
        if conf.is_set(key) and conf[key]:
            raise InvalidConfigError(f"{key}: {why}", key, conf[key])
    conf.require("metadata.broker.list")
    return conf, topics


def _layer(role: str, layer: Mapping[str, Any]) -> dict[str, Any]:
    """Canonical name -> coerced value for one layer; two names of one setting must agree."""
    out: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    for raw_key, raw_value in layer.items():
        spec = _spec_for(role, raw_key)
        value = _coerce(spec, raw_value, raw_key)
        if spec.name in out and out[spec.name] != value:
            raise InvalidConfigError(
                f"{spelled[spec.name]!r} and {raw_key!r} both set {spec.name!r}, to "
                f"{out[spec.name]!r} and {value!r}; give only one",
                spec.name,
                value,
            )
        out[spec.name], spelled[spec.name] = value, raw_key
    return out


def _spec_for(role: str, key: Any) -> ConfigKey:
    """The table row for ``key`` (a name or alias) if ``role`` accepts it, else raise."""
    if not isinstance(key, str):
        raise InvalidConfigError(f"config keys must be strings, got {key!r}", str(key))
    spec = _BY_NAME.get(_ALIASES.get(key, key))
    if spec is None:
        foreign = foreign_message(role, key)
        if foreign is not None:
            raise InvalidConfigError(foreign, key)
        raise InvalidConfigError(_unknown_message(role, key), key, None, _suggest(role, key))
    if role not in spec.roles:
        owner = next(iter(spec.roles))
        raise InvalidConfigError(
            f"config {key!r} is a {owner} setting; the {role} does not accept it",
            key,
        )
    return spec


def _suggest(role: str, key: str) -> str | None:
    """The known name (canonical or alias) of this role closest to ``key``, if any is close."""
    names = [n for k in KEYS if role in k.roles for n in (k.name, *k.aliases)]
    close = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
    return close[0] if close else None


def _unknown_message(role: str, key: str) -> str:
    """``unknown producer config key 'x'; did you mean 'y'?``."""
    text = f"unknown {role} config key {key!r}"
    near = _suggest(role, key)
    if near is None:
        return text + f"; see kclient.config.describe_keys({role!r})"
    canonical = _ALIASES.get(near)
    also = f" (alias of {canonical!r})" if canonical else ""
    return text + f"; did you mean {near!r}{also}?"


def _coerce(spec: ConfigKey, value: Any, given_as: str) -> Any:
    """``value`` converted to the key's type, or InvalidConfigError naming key, value, allowed."""
    if value is None and spec.default is None:
        return None
    try:
        return spec.type.coerce(value)
    except BadValue as bad:
        alias = f" (given as {given_as!r})" if given_as != spec.name else ""
        detail = f" ({bad.detail})" if bad.detail else ""
        raise InvalidConfigError(
            f"invalid value {value!r} for config {spec.name!r}{alias}: "
            f"expected {bad.allowed}{detail}",
            spec.name,
            value,
            bad.allowed,
        ) from None


def describe_keys(role: str) -> list[ConfigKey]:
    """The keys a role accepts ("producer", "consumer", or "common" for both), for docs."""
    if role == "common":
        return [k for k in KEYS if k.roles == _BOTH]
    if role not in ROLES:
        raise ValueError(f"role must be one of producer, consumer, common, not {role!r}")
    return [k for k in KEYS if role in k.roles]


def keys_markdown(role: str) -> str:
    """A Markdown table of ``describe_keys(role)`` (docs/configuration.md is built from it)."""
    rows = ["| key | default | allowed values | aliases | what it does |", "|---|---|---|---|---|"]
    for key in describe_keys(role):
        if role != "common" and key.roles == _BOTH:
            continue
        default = key.default_text
        if key.default is not None and not isinstance(key.default, Derived):
            default = f"`{default}`" if default else '`""`'
        aliases = ", ".join(f"`{a}`" for a in key.aliases)
        differs = f" **0.8.2:** {key.differs}." if key.differs else ""
        cells = [f"`{key.name}`", default, key.type.allowed(), aliases, key.doc + differs]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows) + "\n"
