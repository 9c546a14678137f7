"""Partitioners: Java-compatible murmur2, Java String.hashCode, round robin."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kclient.partitioner as kp
from kclient.partitioner import (
    DefaultPartitioner,
    JavaHashPartitioner,
    Partitioner,
    RoundRobinPartitioner,
    java_string_hashcode,
    murmur2,
    to_positive,
)
from tests.needs import need_module

# Kafka's own test vectors: clients/src/test/.../common/utils/UtilsTest.java, testMurmur2.
KAFKA_UTILS_TEST = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
]

# Values printed by Java's Utils.murmur2 for these keys (kafkajs' defaultJava test data,
# generated with a Java program calling the Kafka implementation).
JAVA_GENERATED = [
    (b"0", 971027396),
    (b"1", -1993445489),
    (b"128", -326012175),
    (b"2187", -1508407203),
    (b"16384", -325739742),
    (b"78125", -1654490814),
    (b"279936", 1462227128),
    (b"823543", -2014198330),
    (b"2097152", 607668903),
    (b"4782969", -1182699775),
    (b"10000000", -1830336757),
    (b"19487171", -1603849305),
    (b"35831808", -857013643),
    (b"62748517", -1167431028),
    (b"105413504", -381294639),
    (b"170859375", -1658323481),
    (b"100:48069", 1009543857),
]

# Partition the Java producer's partitioner picks among 1000 partitions (kafka-python's
# test_murmur2_java_compatibility, compared against org.apache.kafka.clients.producer).
JAVA_PARTITIONS_OF_1000 = [
    (b"", 681),
    (b"a", 524),
    (b"ab", 434),
    (b"abc", 107),
    (b"123456789", 566),
    (b"\x00 ", 742),
]

# java.lang.String.hashCode(), printed by OpenJDK (jshell) for these strings.
JAVA_HASHCODES = [
    ("", 0),
    ("a", 97),
    ("hello", 99162322),
    ("Kafka", 72255238),
    ("user-1", -836031825),
    ("polygenelubricants", -2147483648),
    ("été", 227742),
    ("日本語", 25921943),
    ("\U0001f600", 1772899),  # one code point, two UTF-16 code units
    ("a-little-bit-longer-string", -1512594870),
]


def reference_murmur2(data: bytes) -> int:
    """Line-by-line transcription of the Java algorithm with explicit 32-bit wrap-around."""

    def i32(x: int) -> int:
        x &= 0xFFFFFFFF
        return x - (1 << 32) if x >= 1 << 31 else x

    def ushr(x: int, n: int) -> int:
        return (x & 0xFFFFFFFF) >> n

    length = len(data)
    m, r = 0x5BD1E995, 24
    h = i32(0x9747B28C ^ length)
    for i in range(length // 4):
        i4 = i * 4
        k = data[i4] + (data[i4 + 1] << 8) + (data[i4 + 2] << 16) + (data[i4 + 3] << 24)
        k = i32(k * m)
        k = i32(k ^ ushr(k, r))
        k = i32(k * m)
        h = i32(h * m)
        h = i32(h ^ k)
    rest = length % 4
    base = length & ~3
    if rest == 3:
        h = i32(h ^ (data[base + 2] << 16))
    if rest >= 2:
        h = i32(h ^ (data[base + 1] << 8))
    if rest >= 1:
        h = i32(h ^ data[base])
        h = i32(h * m)
    h = i32(h ^ ushr(h, 13))
    h = i32(h * m)
    return i32(h ^ ushr(h, 15))


@pytest.mark.parametrize("data,expected", KAFKA_UTILS_TEST + JAVA_GENERATED)
def test_murmur2_matches_java(data, expected):
    assert murmur2(data) == expected


@pytest.mark.parametrize("data,expected", JAVA_PARTITIONS_OF_1000)
def test_default_partitioner_picks_the_java_partition(data, expected):
    assert DefaultPartitioner().partition(data, 1000) == expected


def test_partition_formula_uses_sign_bit_mask_not_abs():
    # murmur2(b"21") is negative: abs() and the Java formula (h & 0x7fffffff) disagree.
    h = murmur2(b"21")
    assert DefaultPartitioner().partition(b"21", 1000) == (h & 0x7FFFFFFF) % 1000
    assert (h & 0x7FFFFFFF) % 1000 != abs(h) % 1000


@pytest.mark.parametrize("length", list(range(140)))
def test_murmur2_every_length_matches_reference(length):
    data = bytes((i * 37 + length) & 0xFF for i in range(length))
    assert murmur2(data) == reference_murmur2(data)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_murmur2_random_bytes_match_reference(data):
    assert murmur2(data) == reference_murmur2(data)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_murmur2_matches_kafka_python(data):
    other = need_module("kafka.partitioner.default")
    assert murmur2(data) & 0xFFFFFFFF == other.murmur2(data) & 0xFFFFFFFF


def test_murmur2_accepts_bytes_likes_and_returns_signed_32_bit():
    assert murmur2(bytearray(b"foobar")) == murmur2(memoryview(b"foobar")) == -790332482
    assert -(1 << 31) <= murmur2(b"\xff" * 33) < 1 << 31


def test_to_positive():
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(-(1 << 31)) == 0
    assert to_positive(5) == 5


def test_str_key_is_hashed_as_utf8():
    p = DefaultPartitioner()
    assert p.partition("héllo", 97) == p.partition("héllo".encode(), 97)
    assert p.partition(bytearray(b"abc"), 1000) == p.partition(memoryview(b"abc"), 1000) == 107


def test_null_key_goes_to_a_random_partition():
    p = DefaultPartitioner()
    seen = {p.partition(None, 4) for _ in range(300)}
    assert seen == {0, 1, 2, 3}


def test_single_partition_always_zero():
    assert DefaultPartitioner().partition(b"anything", 1) == 0


@pytest.mark.parametrize("cls", [DefaultPartitioner, JavaHashPartitioner, RoundRobinPartitioner])
@pytest.mark.parametrize("n", [0, -3])
def test_no_partitions_is_an_error(cls, n):
    with pytest.raises(ValueError, match="num_partitions must be positive"):
        cls().partition(b"k", n)


@pytest.mark.parametrize("cls", [DefaultPartitioner, JavaHashPartitioner])
def test_unserialized_key_is_a_clear_type_error(cls):
    with pytest.raises(TypeError, match=r"not int; serialize it first \(key.serializer.class\)"):
        cls().partition(12345, 10)


def test_hash_cache_is_bounded_and_stays_correct():
    p = DefaultPartitioner()
    keys = [f"key-{i}".encode() for i in range(kp._CACHE_MAX + 500)]
    got = [p.partition(k, 1000) for k in keys]
    assert len(p._cache) <= kp._CACHE_MAX
    assert got == [(reference_murmur2(k) & 0x7FFFFFFF) % 1000 for k in keys]
    assert [p.partition(k, 1000) for k in keys[:50]] == got[:50]


def test_partitions_are_stable_across_processes_with_different_hash_seeds():
    keys = [f"user-{i}" for i in range(200)]
    here = [DefaultPartitioner().partition(k, 12) for k in keys]
    script = (
        "from kclient.partitioner import DefaultPartitioner\n"
        f"keys = {keys!r}\n"
        "print([DefaultPartitioner().partition(k, 12) for k in keys])\n"
    )
    root = Path(__file__).resolve().parents[1]
    for seed in ("1", "4242"):
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(root))
        out = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
        )
        assert out.stdout.strip() == str(here)
    assert len(set(here)) == 12


# ---------------------------------------------------------------- Java String.hashCode


@pytest.mark.parametrize("text,expected", JAVA_HASHCODES)
def test_java_string_hashcode(text, expected):
    assert java_string_hashcode(text) == expected


def test_java_hash_partitioner_mask_mode_is_kafka_081_utils_abs():
    p = JavaHashPartitioner()  # n & 0x7fffffff
    assert p.partition("hello", 7) == 99162322 % 7
    assert p.partition("user-1", 7) == (-836031825 & 0x7FFFFFFF) % 7 == 3


def test_java_hash_partitioner_abs_mode_is_kafka_082_utils_abs():
    p = JavaHashPartitioner(abs_mode="abs")
    assert p.partition("user-1", 7) == 836031825 % 7 == 6
    assert p.partition("hello", 7) == 99162322 % 7


@pytest.mark.parametrize("mode", ["mask", "abs"])
def test_java_hash_partitioner_min_value_hash_goes_to_zero(mode):
    # Math.abs(Integer.MIN_VALUE) is negative in Java; both Kafka Utils.abs versions give 0.
    assert JavaHashPartitioner(mode).partition("polygenelubricants", 10) == 0


def test_java_hash_partitioner_decodes_bytes_keys_as_utf8():
    p = JavaHashPartitioner()
    assert p.partition("été".encode(), 10) == p.partition("été", 10) == 227742 % 10


def test_java_hash_partitioner_rejects_unknown_mode():
    with pytest.raises(ValueError, match="abs_mode must be 'mask' or 'abs'"):
        JavaHashPartitioner("floor")


def test_java_hash_partitioner_null_key_random():
    assert {JavaHashPartitioner().partition(None, 3) for _ in range(200)} == {0, 1, 2}


# ---------------------------------------------------------------- round robin and interface


def test_round_robin_cycles_and_ignores_key():
    p = RoundRobinPartitioner()
    assert [p.partition(b"same", 3) for _ in range(7)] == [0, 1, 2, 0, 1, 2, 0]


def test_round_robin_is_thread_safe():
    p = RoundRobinPartitioner()
    results: list[int] = []
    lock = threading.Lock()

    def work():
        mine = [p.partition(None, 10**9) for _ in range(2000)]
        with lock:
            results.extend(mine)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == list(range(16000))


def test_partitioner_interface():
    with pytest.raises(NotImplementedError):
        Partitioner().partition(b"k", 3)
    assert DefaultPartitioner()(b"abc", 1000) == 107
    assert kp.Murmur2Partitioner is DefaultPartitioner


def test_partitioner_imports_nothing_of_kclient():
    tree = ast.parse(Path(kp.__file__).read_text())
    names = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    names += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in names if m.startswith("kclient")]
