"""Keys of kafka-python and confluent-kafka (librdkafka) that kclient does not take.

Users moving code bring these; a fuzzy guess ("did you mean 'buffer.size'?") would send them to
an unrelated key, so each is refused by name: "not supported by kclient", what to use instead
when there is an equivalent, and a pointer to docs/migrating.md.  Keys are written with dots;
a keyword (``buffer_memory=``) or a confluent callback name (``error_cb``) finds its row too.
"""

from __future__ import annotations

__all__ = ["FOREIGN", "foreign_message"]

_LOGGING = "kclient reports through the logging module (the 'kclient' loggers)"
_ON_DELIVERY = "pass on_delivery= to Producer() or produce() (a keyword, not a config key)"

#: key -> what to do instead ("" when there is nothing to do)
FOREIGN: dict[str, str] = {
    # producer
    "buffer.memory": "the queue is bounded in messages: 'queue.buffering.max.messages'",
    "queue.buffering.max.kbytes": "the queue is bounded in messages: "
    "'queue.buffering.max.messages'",
    "max.block.ms": "use 'queue.enqueue.timeout.ms' (-1 block, 0 raise at once, >0 wait)",
    "message.timeout.ms": "use 'delivery.timeout.ms'",
    "sticky.partitioning.linger.ms": "",
    "delivery.report.only.error": _ON_DELIVERY,
    "on.delivery": _ON_DELIVERY,
    "dr.cb": _ON_DELIVERY,
    "dr.msg.cb": _ON_DELIVERY,
    # consumer
    "max.poll.interval.ms": "kclient.Consumer keeps its session with a heartbeat thread; "
    "there is no poll-interval deadline",
    "enable.partition.eof": "",
    "enable.auto.offset.store": "",
    "check.crcs": "CRCs are always checked",
    "queued.min.messages": "",
    "queued.max.messages.kbytes": "",
    "fetch.error.backoff.ms": "",
    "fetch.queue.backoff.ms": "",
    "default.offset.commit.callback": "pass callback= to commit_async()",
    "legacy.iterator": "",
    "allow.auto.create.topics": "consumers never create topics",
    # connections and the rest
    "connections.max.idle.ms": "connections stay open until close()",
    "reconnect.backoff.ms": "use 'reconnect.backoff.max.ms'",
    "retry.backoff.max.ms": "use 'retry.backoff.ms'",
    "socket.connection.setup.timeout.ms": "use 'connect.timeout.ms'",
    "socket.keepalive.enable": "",
    "socket.options": "",
    "sock.chunk.bytes": "",
    "sock.chunk.buffer.count": "",
    "selector": "",
    "kafka.client": "",
    "broker.address.family": "",
    "topic.metadata.refresh.sparse": "",
    "api.version.auto.timeout.ms": "use 'api.version.request' / 'broker.version.fallback'",
    "metric.reporters": "use 'stats.cb' with 'statistics.interval.ms' (docs/metrics.md)",
    "metrics.num.samples": "",
    "metrics.sample.window.ms": "",
    "ssl.check.hostname": "use 'ssl.endpoint.identification.algorithm' ('https' or 'none')",
    "ssl.crlfile": "",
    "sasl.kerberos.service.name": "GSSAPI (Kerberos) is not implemented",
    "sasl.kerberos.domain.name": "GSSAPI (Kerberos) is not implemented",
    "sasl.kerberos.keytab": "GSSAPI (Kerberos) is not implemented",
    "sasl.kerberos.principal": "GSSAPI (Kerberos) is not implemented",
    "sasl.oauth.token.provider": "use 'sasl.oauthbearer.token.callback' (alias 'oauth_cb')",
    "error.cb": _LOGGING,
    "throttle.cb": _LOGGING,
    "logger": _LOGGING,
    "log.level": _LOGGING,
    "debug": _LOGGING,
    "log.connection.close": _LOGGING,
}


def foreign_message(role: str, key: str) -> str | None:
    """The refusal of a kafka-python / confluent-kafka key kclient does not take, or None."""
    dotted = key.replace("_", ".")
    if dotted not in FOREIGN:
        return None
    instead = FOREIGN[dotted]
    then = f" ({instead})" if instead else ""
    return (
        f"{role} config key {key!r} (kafka-python / confluent-kafka) is not supported by "
        f"kclient{then}; see docs/migrating.md"
    )
