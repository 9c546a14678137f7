"""The producer's uniform v2 fast path equals the general builder, byte for byte."""

from __future__ import annotations

import pytest

from kclient.protocol.records import RecordsReader, build_batch, encode_v2_uniform


@pytest.mark.parametrize("n", [1, 2, 63, 64, 65, 8191, 8193, 20000])
@pytest.mark.parametrize("length", [0, 1, 63, 64, 100, 10000])
def test_uniform_fast_path_equals_build_batch(n, length):
    n = min(n, 50_000_000 // max(length, 1))  # keep the big-value cases small
    values = [bytes([i % 251]) * length for i in range(n)]
    assert encode_v2_uniform(values, length, 0, 1700000000000) == build_batch(
        values, timestamp=1700000000000
    )


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_uniform_fast_path_compressed_reads_back(codec):
    values = [b"%05d" % i for i in range(1000)]
    data = encode_v2_uniform(values, 5, codec, 5)
    assert [bytes(r.value) for r in RecordsReader(data)] == values
