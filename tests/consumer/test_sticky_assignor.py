"""The cooperative-sticky assignor and the consumer protocol's Subscription / Assignment bytes."""

import struct
from types import SimpleNamespace

import pytest

from kclient.config import load_config
from kclient.consumer.group_protocol import (
    COOPERATIVE,
    decode_assignment,
    decode_subscription,
    decode_subscription_full,
    encode_assignment,
    encode_subscription,
    is_cooperative,
    leader_assignment,
    member_user_data,
    registration,
    registration_of,
    strategies_of,
    subscription_generation,
)
from kclient.consumer.sticky import resolve_owned, sticky_assign, withhold_transfers
from kclient.errors import InvalidConfigError

# -- bytes (layouts of Kafka's ConsumerProtocolSubscription.json / ConsumerProtocolAssignment.json)

# v3: version, topics ["t"], user data (empty), owned [("t", [1])], generation 5, rack null
SUB_V3 = bytes.fromhex("0003000000010001740000000000000001000174000000010000000100000005ffff")


def test_subscription_v3_known_bytes_round_trip():
    assert encode_subscription(["t"], b"", {"t": [1]}, 5) == SUB_V3
    sub = decode_subscription_full(SUB_V3)
    assert (
        sub.version,
        sub.topics,
        sub.user_data,
        sub.owned_partitions,
        sub.generation_id,
        sub.rack_id,
    ) == (3, ["t"], b"", {"t": [1]}, 5, None)
    assert decode_subscription(SUB_V3) == (["t"], b"")


def test_subscription_versions_0_to_2_and_newer():
    v0 = encode_subscription(["a", "b"], b"ud")
    assert v0 == bytes.fromhex("00000000000200016100016200000002") + b"ud"
    assert decode_subscription_full(v0).owned_partitions == {}
    v1 = encode_subscription(["a"], None, {"a": [2, 0]}, version=1)
    # null user data is length -1; owned partitions sorted
    assert v1 == bytes.fromhex("000100000001000161ffffffff00000001000161000000020000000000000002")
    sub1 = decode_subscription_full(v1)
    assert sub1.user_data == b"" and sub1.owned_partitions == {"a": [0, 2]}
    assert sub1.generation_id == -1
    v2 = encode_subscription(["a"], b"", {}, 7, version=2)
    assert v2.endswith(bytes.fromhex("0000000000000007"))
    assert decode_subscription_full(v2).generation_id == 7
    # a future version (9) with a field appended parses as the highest known, as Java does
    v9 = b"\x00\x09" + SUB_V3[2:] + b"\x00\x00\x00\x2a"
    assert decode_subscription_full(v9).owned_partitions == {"t": [1]}
    # a v1 without the owned array (truncated by an old writer) still parses
    assert decode_subscription_full(b"\x00\x01" + v0[2:]).topics == ["a", "b"]
    with pytest.raises(ValueError):
        decode_subscription_full(b"\xff\xff" + v0[2:])


def test_assignment_known_bytes_round_trip():
    data = encode_assignment({"t": [3, 1], "s": [0]}, None, version=1)
    assert data == bytes.fromhex(
        "0001000000020001730000000100000000000174000000020000000100000003ffffffff"
    )
    assert decode_assignment(data) == ({"s": [0], "t": [1, 3]}, b"")
    assert decode_assignment(b"") == ({}, b"")
    assert decode_assignment(encode_assignment({}, b"x")) == ({}, b"x")


def test_cooperative_user_data_is_javas_generation_then_registration():
    reg = registration("g_c1", "static", {"t": 1})
    ud = member_user_data(COOPERATIVE, reg, 12)
    assert ud[:4] == struct.pack(">i", 12) and ud[4:] == reg
    assert registration_of(ud)["consumer_id"] == "g_c1" and registration_of(reg) is not None
    assert registration_of(struct.pack(">i", 3)) is None  # Java's: generation only
    assert member_user_data("range", reg, 12) == reg
    java_v1 = decode_subscription_full(
        encode_subscription(["t"], struct.pack(">i", 4), {"t": [0]}, version=1)
    )
    assert subscription_generation(java_v1) == 4
    assert subscription_generation(decode_subscription_full(SUB_V3)) == 5
    assert subscription_generation(decode_subscription_full(encode_subscription(["t"], b""))) == -1


def test_strategy_config_accepts_names_java_classes_and_lists():
    def strategy(v):
        return load_config("consumer", None, partition_assignment_strategy=v)[
            "partition.assignment.strategy"
        ]

    assert strategy("cooperative-sticky") == "cooperative-sticky"
    assert (
        strategy("org.apache.kafka.clients.consumer.CooperativeStickyAssignor")
        == "cooperative-sticky"
    )
    assert (
        strategy(["org.apache.kafka.clients.consumer.CooperativeStickyAssignor", "RANGE"])
        == "cooperative-sticky,range"
    )
    assert strategy("roundrobin, range") == "roundrobin,range"
    with pytest.raises(InvalidConfigError, match="cooperative-sticky"):
        strategy("sticky")
    assert strategies_of("cooperative-sticky,range") == ["cooperative-sticky", "range"]
    assert is_cooperative(["cooperative-sticky"])
    assert not is_cooperative(["cooperative-sticky", "range"])  # Java: then eager


# -- the assignor -------------------------------------------------------------------------------


def _counts(decision, units):
    return {u: sum(1 for v in decision.values() if v == u) for u in units}


def test_sticky_fresh_assignment_is_balanced_and_complete():
    units = ["a-0", "b-0", "c-0"]
    d = sticky_assign({"t": units, "s": units}, {"t": range(7), "s": range(3)})
    assert set(d) == {("t", p) for p in range(7)} | {("s", p) for p in range(3)}
    counts = _counts(d, units)
    assert max(counts.values()) - min(counts.values()) <= 1


def test_sticky_keeps_owners_and_moves_only_the_surplus():
    owned = {"a-0": [("t", p) for p in range(6)]}
    d = sticky_assign({"t": ["a-0", "b-0"]}, {"t": range(6)}, owned)
    kept = {tp for tp, u in d.items() if u == "a-0"}
    assert len(kept) == 3 and kept <= set(owned["a-0"])
    assert _counts(d, ["a-0", "b-0"]) == {"a-0": 3, "b-0": 3}
    # a third member: a and b each give up one, nothing else moves
    now = {u: [tp for tp, v in d.items() if v == u] for u in ("a-0", "b-0")}
    d2 = sticky_assign({"t": ["a-0", "b-0", "c-0"]}, {"t": range(6)}, now)
    for u in ("a-0", "b-0"):
        mine = {tp for tp, v in d2.items() if v == u}
        assert len(mine) == 2 and mine <= set(now[u])
    # a member leaves: the survivors keep theirs and share its partitions
    survivors = {u: [tp for tp, v in d2.items() if v == u] for u in ("a-0", "c-0")}
    d3 = sticky_assign({"t": ["a-0", "c-0"]}, {"t": range(6)}, survivors)
    for u, tps in survivors.items():
        assert set(tps) <= {tp for tp, v in d3.items() if v == u}
    assert _counts(d3, ["a-0", "c-0"]) == {"a-0": 3, "c-0": 3}


def test_sticky_unequal_subscriptions_and_no_partition_twice():
    units = {"t": ["a-0", "b-0"], "s": ["b-0"]}
    owned = {"a-0": [("t", 0), ("s", 0)], "b-0": [("t", 0)]}  # a claims s, which it dropped
    d = sticky_assign(units, {"t": range(4), "s": range(2)}, owned)
    assert d[("s", 0)] == "b-0" and d[("s", 1)] == "b-0"  # only b subscribes to s
    assert len(d) == 6 and d[("t", 0)] == "a-0"  # first claim (sorted) wins
    assert _counts(d, ["a-0", "b-0"]) == {"a-0": 3, "b-0": 3}


def test_resolve_owned_prefers_the_highest_generation_and_drops_shared_claims():
    claims = {
        "a": (5, [("t", 0), ("t", 1)]),
        "b": (3, [("t", 1), ("t", 2)]),
        "c": (5, [("t", 1), ("t", 3)]),
        "d": (-1, [("t", 4)]),
    }
    got = resolve_owned(claims)
    assert got == {"a": {("t", 0)}, "b": set(), "c": {("t", 3)}, "d": set()}
    assert resolve_owned({"x": (-1, [("t", 0)])}) == {"x": {("t", 0)}}


def test_withhold_transfers_until_the_owner_revoked():
    new = {"a": {("t", 0)}, "b": {("t", 1), ("t", 2)}}
    claims = {"a": [("t", 0), ("t", 1)], "b": [("t", 9)]}
    assert withhold_transfers(new, claims) == {"a": {("t", 0)}, "b": {("t", 2)}}


def _member(member_id, topics, owned=None, generation=-1, consumer_id=None):
    user = b""
    if consumer_id:
        user = member_user_data(
            COOPERATIVE, registration(consumer_id, "static", dict.fromkeys(topics, 1)), generation
        )
    meta = encode_subscription(topics, user, owned or {}, generation)
    return SimpleNamespace(member_id=member_id, group_instance_id=None, metadata=meta)


def _assigned(out):
    return {a["member_id"]: decode_assignment(a["assignment"])[0] for a in out}


def test_leader_two_phase_handover_between_kclient_and_java_members():
    parts = {"t": list(range(4))}
    # round 1: a owns everything (generation 3), java member j joins fresh
    members = [
        _member("ma", ["t"], {"t": [0, 1, 2, 3]}, 3, consumer_id="g_a"),
        _member("j", ["t"], generation=-1),
    ]
    got = _assigned(leader_assignment(COOPERATIVE, members, ["t"], parts))
    assert sorted(got["ma"]["t"]) in ([0, 1], [2, 3])  # keeps half
    assert got["j"] == {}  # nothing while a owns it
    kept = got["ma"]["t"]
    # round 2: a revoked the rest and rejoins owning only what it kept
    members = [
        _member("ma", ["t"], {"t": kept}, 4, consumer_id="g_a"),
        _member("j", ["t"], generation=-1),
    ]
    got2 = _assigned(leader_assignment(COOPERATIVE, members, ["t"], parts))
    assert sorted(got2["ma"]["t"]) == sorted(kept)
    assert sorted(got2["j"]["t"]) == sorted(set(range(4)) - set(kept))


def test_leader_ignores_stale_generation_claims():
    parts = {"t": list(range(2))}
    members = [_member("a", ["t"], {"t": [0, 1]}, 7), _member("b", ["t"], {"t": [0]}, 2)]
    got = _assigned(leader_assignment(COOPERATIVE, members, ["t"], parts))
    # a's claim (generation 7) counts; b's stale claim of 0 only delays nothing of a's
    assert got["a"] in ({"t": [0]}, {"t": [1]}) or got["a"] == {"t": [0, 1]}
    assert not (set(got["a"].get("t", [])) & set(got["b"].get("t", [])))
    assert 0 in got["a"]["t"]  # stays with its current-generation owner


@pytest.mark.parametrize("seed", range(40))
def test_sticky_random_groups_keep_invariants(seed):
    """Random members, subscriptions and prior ownership: every partition assigned once to an
    eligible unit; equal subscriptions balanced within one; a unit at or under its fair share
    keeps everything it owned."""
    import random

    rnd = random.Random(seed)
    topics = {f"t{i}": rnd.randint(1, 9) for i in range(rnd.randint(1, 4))}
    units = [f"m{i}-0" for i in range(rnd.randint(1, 6))]
    equal = rnd.random() < 0.5
    subs = {
        t: sorted(u for u in units if equal or rnd.random() < 0.7) or [units[0]] for t in topics
    }
    all_tps = [(t, p) for t, n in topics.items() for p in range(n)]
    owned: dict[str, list] = {}
    for tp in all_tps:
        if rnd.random() < 0.6:
            owned.setdefault(rnd.choice(units), []).append(tp)
    d = sticky_assign(subs, {t: range(n) for t, n in topics.items()}, owned)
    assert sorted(d) == sorted(all_tps)
    assert all(u in subs[t] for (t, _), u in d.items())
    counts = _counts(d, units)
    if equal:
        assert max(counts.values()) - min(counts.values()) <= 1
        fair = -(-len(all_tps) // len(units))
        for u, tps in owned.items():
            if len(tps) <= fair - 1:
                assert all(d[tp] == u for tp in tps), (u, tps)
