"""A byte flipped inside a segment file on disk: the fetch names the corrupt entry's offset.

The broker serves segment bytes as they are (sendfile, no CRC check on reads, like Kafka), so
the corruption reaches the client, whose CRC check must catch it.
"""

import pytest

from kclient.errors import CorruptRecordError
from kclient.protocol.records import RecordsReader, build_batch
from kclient.simple import FetchRequest, SimpleConsumer
from tests.simple.segments import flip, segment


def consumer(mini):
    return SimpleConsumer(
        mini.host, mini.port, so_timeout=10000, buffer_size=None, client_id="corrupt"
    )


@pytest.mark.parametrize("where", ["value", "record-header", "batch-attributes"])
def test_flipped_byte_in_a_v2_batch(mini, where):
    topic = mini.topic()
    for i in range(5):
        mini.produce(topic, 0, build_batch([b"payload-%d-%d" % (i, j) for j in range(10)]))
    path = segment(mini, topic)
    data = path.read_bytes()
    spans = RecordsReader(data).entries
    third = spans[2]  # offsets 20..29
    delta = {"value": third.size - 5, "record-header": 62, "batch-attributes": 22}[where]
    flip(path, third.position + delta)

    with consumer(mini) as c:
        ms = c.fetch(FetchRequest(topic, 0, 0, 1 << 20))
        got = []
        with pytest.raises(CorruptRecordError) as info:
            for mo in ms:
                got.append(mo.offset)
        assert got == list(range(20))  # everything in front of the corrupt batch
        assert info.value.offset == 20
        assert f"{topic}-0" in str(info.value) and "at offset 20" in str(info.value)

        for offset in (20, 25):  # fetching at (or into) the corrupt batch raises at once
            with pytest.raises(CorruptRecordError) as info:
                c.fetch(FetchRequest(topic, 0, offset, 1 << 20))
            assert info.value.offset == 20
        # past it, the log reads normally
        assert [m.offset for m in c.fetch(FetchRequest(topic, 0, 30, 1 << 20))][:1] == [30]


@pytest.mark.parametrize("magic", [0, 1])
def test_flipped_byte_in_an_old_format_message(mini, magic):
    topic = mini.topic(config={"message.format.version": str(magic)})
    mini.produce_legacy(topic, 0, [b"message-%02d" % i for i in range(12)], magic=magic)
    path = segment(mini, topic)
    spans = RecordsReader(path.read_bytes()).entries
    assert len(spans) == 12
    flip(path, spans[7].position + spans[7].size - 3)  # inside message 7's value

    with consumer(mini) as c:
        got = []
        with pytest.raises(CorruptRecordError) as info:
            for mo in c.fetch(FetchRequest(topic, 0, 0, 1 << 20)):
                got.append(mo.offset)
        assert got == list(range(7)) and info.value.offset == 7
        with pytest.raises(CorruptRecordError, match="at offset 7"):
            c.fetch(FetchRequest(topic, 0, 7, 1 << 20))
