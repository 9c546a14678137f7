"""Where Apache Kafka's jars live (fetched by ``scripts/fetch-kafka``) and how to run its classes.

Versions sit in ``${KCLIENT_CACHE:-~/.cache/kclient}/kafka/<version>/libs``; a version is usable
once its ``.complete`` marker exists. "4" or "3" means the newest fetched version of that major.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

__all__ = [
    "kafka_cache",
    "kafka_versions",
    "kafka_version",
    "kafka_problem",
    "kafka_java",
    "run_kafka_tool",
    "start_kafka_tool",
    "log_config",
    "tool_class",
]

FETCH_HINT = "run scripts/fetch-kafka (needs mvn and Maven Central)"

#: Kafka's tools by their script names (bin/kafka-<name>.sh), as classes of the 4.x jars.
TOOLS = {
    "console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "topics": "org.apache.kafka.tools.TopicCommand",
    "get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
    "dump-log": "org.apache.kafka.tools.DumpLogSegments",
    "storage": "kafka.tools.StorageTool",
    "acls": "org.apache.kafka.tools.AclCommand",
}
#: Where 3.x still kept a tool in the Scala core.
TOOLS_3 = {
    "console-producer": "kafka.tools.ConsoleProducer",
    "dump-log": "kafka.tools.DumpLogSegments",
    "acls": "kafka.admin.AclCommand",
}


def kafka_cache() -> Path:
    """The directory holding one sub-directory per fetched Kafka version."""
    root = os.environ.get("KCLIENT_CACHE") or os.path.join(Path.home(), ".cache", "kclient")
    return Path(root) / "kafka"


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else -1 for p in version.split("."))


def kafka_versions() -> list[str]:
    """Fetched Kafka versions, oldest first."""
    cache = kafka_cache()
    if not cache.is_dir():
        return []
    found = [d.name for d in cache.iterdir() if (d / ".complete").exists()]
    return sorted(found, key=_key)


def kafka_version(version: str = "4") -> str | None:
    """The fetched version matching ``version`` exactly, or the newest one with that prefix."""
    fetched = kafka_versions()
    if version in fetched:
        return version
    matching = [v for v in fetched if v.startswith(version + ".")]
    return matching[-1] if matching else None


def kafka_problem(version: str = "4") -> str | None:
    """Why Kafka ``version`` cannot run here (for a test's skip reason), or None."""
    if shutil.which("java") is None:
        return "java not found (apt-get install default-jre-headless)"
    if kafka_version(version) is None:
        return f"Apache Kafka {version} not fetched into {kafka_cache()}: {FETCH_HINT}"
    return None


def tool_class(version: str, name: str) -> str:
    """The main class of Kafka's tool ``name`` ("console-producer", ...) in ``version``; any
    other name (a class) is returned as it is."""
    if _key(_exact(version))[0] < 4 and name in TOOLS_3:
        return TOOLS_3[name]
    return TOOLS.get(name, name)


def _exact(version: str) -> str:
    exact = kafka_version(version)
    if exact is None:
        raise RuntimeError(kafka_problem(version) or f"Kafka {version} unavailable")
    return exact


def log_config(version: str, path: Path, level: str = "INFO") -> Path:
    """Write a logging config sending everything at ``level`` to stdout; log4j2 for Kafka 4,
    log4j 1 (reload4j) for Kafka 3. Returns ``path``."""
    if _key(_exact(version))[0] >= 4:
        text = (
            "status = warn\nappender.out.type = Console\nappender.out.name = out\n"
            "appender.out.target = SYSTEM_OUT\nappender.out.layout.type = PatternLayout\n"
            "appender.out.layout.pattern = [%d] %p %m (%c)%n\n"
            f"rootLogger.level = {level}\nrootLogger.appenderRef.out.ref = out\n"
            "logger.kafka-request.name = kafka.request.logger\n"
            "logger.kafka-request.level = WARN\n"
        )
    else:
        text = (
            f"log4j.rootLogger={level}, out\n"
            "log4j.appender.out=org.apache.log4j.ConsoleAppender\n"
            "log4j.appender.out.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.out.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
            "log4j.logger.kafka.request.logger=WARN\n"
        )
    path.write_text(text)
    return path


def kafka_java(
    version: str,
    main: str,
    args: list[str] | tuple[str, ...] = (),
    heap: str = "256m",
    jvm_options: list[str] | None = None,
    log_file: Path | None = None,
) -> list[str]:
    """The ``java`` command line running ``main`` (a tool name or a class in Kafka's jars);
    ``jvm_options`` default to the serial GC (tools are short-lived)."""
    exact = _exact(version)
    libs = kafka_cache() / exact / "libs"
    if log_file is None:
        log_file = kafka_cache() / exact / "tools-log.properties"
        if not log_file.exists():
            log_config(exact, log_file.with_suffix(".tmp"), level="WARN").replace(log_file)
    logging = (
        ["-Dlog4j2.configurationFile=" + str(log_file)]
        if _key(exact)[0] >= 4
        else ["-Dlog4j.configuration=file:" + str(log_file)]
    )
    options = jvm_options if jvm_options is not None else ["-XX:+UseSerialGC"]
    return [
        "java",
        f"-Xmx{heap}",
        "-Djava.awt.headless=true",
        *logging,
        *options,
        "-cp",
        f"{libs}/*",
        tool_class(exact, main),
        *args,
    ]


def run_kafka_tool(
    version: str,
    main: str,
    *args: str,
    timeout: float = 120,
    input: bytes | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess:
    """Run one of Kafka's tools (name or class) to completion; stdout and stderr as bytes.
    ``check`` raises with the tool's output when it exits non-zero."""
    proc = subprocess.run(
        kafka_java(version, main, args), input=input, capture_output=True, timeout=timeout
    )
    if check and proc.returncode != 0:
        raise RuntimeError(
            f"{main} {' '.join(args)} exited {proc.returncode}:\n"
            f"{proc.stdout.decode(errors='replace')[-2000:]}\n"
            f"{proc.stderr.decode(errors='replace')[-3000:]}"
        )
    return proc


def start_kafka_tool(version: str, main: str, *args: str, **popen: Any) -> subprocess.Popen:
    """Start one of Kafka's tool classes in the background (``popen`` goes to Popen)."""
    return subprocess.Popen(kafka_java(version, main, args), **popen)
