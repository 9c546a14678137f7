"""``kclient topics`` and ``kclient offsets`` as subprocesses against the mini-broker."""

from tests.waiting import next_millisecond


def test_topic_lifecycle(cli):
    assert "created topic t1 with 3 partition(s)" in cli.out(
        "topics", "create", "t1", "-p", "3", "--config", "retention.ms=60000"
    )
    done = cli("topics", "create", "t1", "-p", "3", check=1)
    assert b"TopicAlreadyExistsError" in done.stderr
    cli("topics", "create", "t1", "--if-not-exists", check=0)
    assert "would create" in cli.out("topics", "create", "t2", "-p", "1", "--validate-only")
    assert cli.out("topics", "list").split() == ["t1"]
    described = cli.out("topics", "describe", "t1")
    assert "PartitionCount: 3" in described and "retention.ms=60000" in described
    rows = [line.split() for line in described.splitlines()[2:]]
    assert [r[:2] for r in rows] == [["t1", "0"], ["t1", "1"], ["t1", "2"]]
    cli(
        "topics",
        "alter",
        "t1",
        "-p",
        "5",
        "--config",
        "cleanup.policy=compact",
        "--delete-config",
        "retention.ms",
        check=0,
    )
    described = cli.out("topics", "describe", "t1")
    assert "PartitionCount: 5" in described and "cleanup.policy=compact" in described
    assert "retention.ms" not in described
    assert b"InvalidPartitionsError" in cli("topics", "alter", "t1", "-p", "2", check=1).stderr
    done = cli("topics", "alter", "t1", "--config", "no.such.config=1", check=1)
    assert b"InvalidConfigurationError" in done.stderr or b"InvalidRequest" in done.stderr
    assert b"nothing to alter" in cli("topics", "alter", "t1", check=2).stderr
    cli("topics", "delete", "t1", check=0)
    assert b"UnknownTopicOrPartitionError" in cli("topics", "delete", "t1", check=1).stderr
    assert b"UnknownTopicOrPartitionError" in cli("topics", "describe", "t1", check=1).stderr


def test_offsets_earliest_latest_and_by_time(cli, mini_broker):
    cli("topics", "create", "o", "-p", "2", check=0)
    cli("produce", "o", "-p", "1", input=b"a\nb\nc\n", check=0)
    middle = next_millisecond()  # after a, b, c's timestamps
    next_millisecond(middle)  # and before d's
    cli("produce", "o", "-p", "1", input=b"d\n", check=0)
    assert cli.out("offsets", "o").split() == ["o:0:0", "o:1:4"]
    assert cli.out("offsets", "o", "--time", "earliest", "-p", "1").split() == ["o:1:0"]
    assert cli.out("offsets", "o", "--time", str(middle), "-p", "1").split() == ["o:1:3"]
    assert cli.out("offsets", "o", "--time", "2999-01-01T00:00:00Z", "-p", "1").split() == ["o:1:"]
    assert b"ISO-8601" in cli("offsets", "o", "--time", "yesterday", check=2).stderr
