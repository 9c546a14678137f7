"""Which fetched Kafka a version asks for, why one cannot run, and the java command lines."""

from __future__ import annotations

import pytest

from kclient.testing import kafka_java, kafka_problem, kafka_version, kafka_versions, tool_class


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A KCLIENT_CACHE with 3.9.2, 4.0.1 and 4.4.0 fetched and 4.10.0 half-fetched (no marker)."""
    monkeypatch.setenv("KCLIENT_CACHE", str(tmp_path))
    for version, complete in (("3.9.2", True), ("4.0.1", True), ("4.4.0", True), ("4.10.0", False)):
        libs = tmp_path / "kafka" / version / "libs"
        libs.mkdir(parents=True)
        if complete:
            (libs.parent / ".complete").write_text(version)
    return tmp_path


def test_versions_sort_numerically_and_need_their_marker(cache):
    assert kafka_versions() == ["3.9.2", "4.0.1", "4.4.0"]


@pytest.mark.parametrize(
    "asked,found",
    [
        ("4", "4.4.0"),
        ("3", "3.9.2"),
        ("4.0", "4.0.1"),
        ("4.0.1", "4.0.1"),
        ("4.10.0", None),
        ("2", None),
    ],
)
def test_a_major_means_the_newest_fetched(cache, asked, found):
    assert kafka_version(asked) == found


def test_missing_jars_are_explained(cache):
    assert kafka_problem("4") is None
    problem = kafka_problem("2")
    assert "scripts/fetch-kafka" in problem and str(cache) in problem


def test_tools_by_name_per_major(cache):
    assert tool_class("4", "console-producer") == "org.apache.kafka.tools.ConsoleProducer"
    assert tool_class("3", "console-producer") == "kafka.tools.ConsoleProducer"
    assert tool_class("3", "consumer-groups").endswith("consumer.group.ConsumerGroupCommand")
    assert tool_class("4", "kafka.Kafka") == "kafka.Kafka"


def test_java_command_line(cache):
    argv = kafka_java("4", "producer-perf-test", ["--num-records", "5"], heap="64m")
    assert argv[0] == "java" and "-Xmx64m" in argv
    assert argv[argv.index("-cp") + 1] == f"{cache}/kafka/4.4.0/libs/*"
    assert argv[-3:] == ["org.apache.kafka.tools.ProducerPerformance", "--num-records", "5"]
    assert any(a.startswith("-Dlog4j2.configurationFile=") for a in argv)
    old = kafka_java("3", "kafka.Kafka")
    assert any(a.startswith("-Dlog4j.configuration=file:") for a in old)
