"""The KIP-848 server-side assignors: every subscribed partition assigned once, balanced,
sticky across membership changes (uniform), contiguous ranges (range)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kclient.broker.assignors import MemberSpec, range_assign, uniform_assign

T1, T2 = b"\x01" * 16, b"\x02" * 16


def flat(assignment):
    return {(t, p) for t, ps in assignment.items() for p in ps}


def test_uniform_balances_and_keeps_what_it_can():
    first = uniform_assign({"a": MemberSpec({T1})}, {T1: 6})
    assert first == {"a": {T1: set(range(6))}}
    second = uniform_assign({"a": MemberSpec({T1}, first["a"]), "b": MemberSpec({T1})}, {T1: 6})
    assert sorted(len(flat(x)) for x in second.values()) == [3, 3]
    assert flat(second["a"]) <= flat(first["a"])  # a only gave partitions up
    third = uniform_assign(
        {
            "a": MemberSpec({T1}, second["a"]),
            "b": MemberSpec({T1}, second["b"]),
            "c": MemberSpec({T1}),
        },
        {T1: 6},
    )
    assert sorted(len(flat(x)) for x in third.values()) == [2, 2, 2]
    assert flat(third["a"]) <= flat(second["a"]) and flat(third["b"]) <= flat(second["b"])


def test_uniform_with_different_subscriptions():
    out = uniform_assign({"a": MemberSpec({T1}), "b": MemberSpec({T1, T2})}, {T1: 2, T2: 2})
    assert flat(out["a"]) | flat(out["b"]) == {(T1, 0), (T1, 1), (T2, 0), (T2, 1)}
    assert all(t == T1 for t, _ in flat(out["a"]))
    assert len(flat(out["a"])) == len(flat(out["b"])) == 2


def test_range_gives_contiguous_ranges():
    out = range_assign({"b": MemberSpec({T1}), "a": MemberSpec({T1})}, {T1: 5})
    assert out == {"a": {T1: {0, 1, 2}}, "b": {T1: {3, 4}}}


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from("abcdef"), st.sets(st.sampled_from([T1, T2]), min_size=1), min_size=1
    ),
    st.integers(0, 9),
    st.integers(0, 9),
)
def test_every_subscribed_partition_once(subs, n1, n2):
    counts = {T1: n1, T2: n2}
    for assign in (uniform_assign, range_assign):
        out = assign({m: MemberSpec(t) for m, t in subs.items()}, counts)
        owned = [tp for a in out.values() for tp in flat(a)]
        wanted = {(t, p) for ts in subs.values() for t in ts for p in range(counts[t])}
        assert sorted(owned) == sorted(wanted)  # each exactly once
        for m, a in out.items():
            assert {t for t, _ in flat(a)} <= subs[m]
