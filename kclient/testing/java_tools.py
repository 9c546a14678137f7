"""Apache Kafka's command-line tools and Java clients, pointed at any broker (the mini-broker or
a real Kafka) for interoperability tests. Runs the tool classes of the jars fetched by
``scripts/fetch-kafka``; the Java client program is compiled with ``javac`` on first use.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from .kafka_dist import _exact, kafka_cache, kafka_java, run_kafka_tool, start_kafka_tool

__all__ = ["KafkaTools", "java_clients_problem"]

JAVA_CLIENTS_SOURCE = Path(__file__).with_name("java") / "JavaClients.java"


def java_clients_problem() -> str | None:
    """Why the Java client program cannot be compiled here, or None."""
    return None if shutil.which("javac") else "javac not found (apt-get install default-jdk)"


class KafkaTools:
    """Kafka ``version``'s tools with ``--bootstrap-server bootstrap``; output as text."""

    def __init__(self, bootstrap: str, version: str = "4", timeout: float = 120):
        self.bootstrap = bootstrap
        self.version = _exact(version)
        self.timeout = timeout
        self._classes: Path | None = None

    def run(self, tool: str, *args: str, input: str | None = None, check: bool = True) -> str:
        """Run a tool (a kafka_dist.TOOLS name or a class) to completion; its stdout."""
        proc = run_kafka_tool(
            self.version,
            tool,
            "--bootstrap-server",
            self.bootstrap,
            *args,
            timeout=self.timeout,
            input=None if input is None else input.encode(),
            check=check,
        )
        return proc.stdout.decode(errors="replace")

    def start(self, tool: str, *args: str) -> subprocess.Popen:
        """Start a tool in the background (stdout piped as text, stderr discarded)."""
        return start_kafka_tool(
            self.version,
            tool,
            "--bootstrap-server",
            self.bootstrap,
            *args,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )

    # -- the tools ----------------------------------------------------------------------------
    def topics(self, *args: str) -> str:
        """kafka-topics.sh."""
        return self.run("topics", *args)

    def produce_lines(self, topic: str, lines: list[str], *args: str) -> None:
        """kafka-console-producer.sh fed ``lines`` (its defaults: acks=all, idempotence)."""
        self.run(
            "console-producer",
            "--topic",
            topic,
            *args,
            input="".join(line + "\n" for line in lines),
        )

    def consume_lines(self, topic: str, count: int, *args: str) -> list[str]:
        """kafka-console-consumer.sh until ``count`` messages (from the beginning)."""
        out = self.run(
            "console-consumer",
            "--topic",
            topic,
            "--from-beginning",
            "--max-messages",
            str(count),
            "--timeout-ms",
            "60000",
            *args,
        )
        return out.splitlines()

    def consumer_groups(self, *args: str) -> str:
        """kafka-consumer-groups.sh."""
        return self.run("consumer-groups", *args)

    def get_offsets(self, topic: str, time: int | str = -1) -> dict[int, int]:
        """kafka-get-offsets.sh: partition -> offset at ``time`` (-1 latest, -2 earliest)."""
        out = self.run("get-offsets", "--topic", topic, "--time", str(time))
        offsets = {}
        for line in out.split():
            _, partition, offset = line.rsplit(":", 2)
            offsets[int(partition)] = int(offset)
        return offsets

    # -- the Java clients ---------------------------------------------------------------------
    def java_clients(self, *args: str) -> list[str]:
        """Run JavaClients (produce|consume ..., see its source) to completion; stdout lines."""
        argv = kafka_java(self.version, "JavaClients", args)
        cp = argv.index("-cp") + 1
        argv[cp] += ":" + str(self._compiled())
        proc = subprocess.run(argv, capture_output=True, timeout=self.timeout)
        if proc.returncode != 0:
            raise RuntimeError(
                f"JavaClients {' '.join(args)} exited {proc.returncode}:\n"
                f"{proc.stderr.decode(errors='replace')[-3000:]}"
            )
        return proc.stdout.decode().splitlines()

    def start_java_clients(self, *args: str) -> subprocess.Popen[str]:
        """Start JavaClients in the background (stdin and stdout piped as text, stderr
        discarded): the ``member`` mode runs until its stdin is closed."""
        argv = kafka_java(self.version, "JavaClients", args)
        cp = argv.index("-cp") + 1
        argv[cp] += ":" + str(self._compiled())
        return subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )

    def _compiled(self) -> Path:
        """Compile JavaClients.java once per version into the jar cache (then reused)."""
        if self._classes is None:
            out = kafka_cache() / self.version / "kclient-java"
            source = out / JAVA_CLIENTS_SOURCE.name
            if (
                not (out / "JavaClients.class").exists()
                or source.read_bytes() != JAVA_CLIENTS_SOURCE.read_bytes()
            ):
                tmp = Path(tempfile.mkdtemp(dir=kafka_cache(), prefix=".javac-"))
                subprocess.run(
                    [
                        "javac",
                        "-nowarn",
                        "-d",
                        str(tmp),
                        "-cp",
                        f"{kafka_cache() / self.version / 'libs'}/*",
                        str(JAVA_CLIENTS_SOURCE),
                    ],
                    check=True,
                    capture_output=True,
                    timeout=self.timeout,
                )
                shutil.copy(JAVA_CLIENTS_SOURCE, tmp / JAVA_CLIENTS_SOURCE.name)
                shutil.rmtree(out, ignore_errors=True)
                try:
                    tmp.rename(out)
                except OSError:  # another process compiled it meanwhile
                    shutil.rmtree(tmp, ignore_errors=True)
            self._classes = out
        return self._classes
