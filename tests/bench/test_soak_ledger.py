"""The soak's bookkeeping: acknowledged ids against the log and each group's deliveries."""

import os
import subprocess
import sys

from kclient.bench.soak_ledger import Events, audit, duplicates, percentile, read_events, rss_mb


def test_event_lines_and_a_line_torn_by_kill9(tmp_path):
    (tmp_path / "p.events").write_text("A p-0 1.5\nA p-1 2.5\nF p-2\nX commit Error\nA p-3 7")
    (tmp_path / "c.events").write_text("C p-0 0 0\nC p-1 1 0\nC p-0 0 0\nC p-1")
    events = read_events([tmp_path / "p.events", tmp_path / "c.events", tmp_path / "none"])
    assert events.acked == {"p-0": 1.5, "p-1": 2.5}  # "A p-3 7" has no newline: torn
    assert events.failed == {"p-2"}
    assert events.consumed == ["p-0", "p-1", "p-0"]


def test_a_malformed_latency_is_not_an_ack():
    events = Events()
    events.add_line("A p-0 1.x\n")
    events.add_line("A p-1\n")
    assert events.acked == {}


def test_audit_counts_lost_duplicates_and_missing():
    acked = ["p-0", "p-1", "p-2", "q-0"]
    stored = ["p-0", "p-1", "p-1", "q-0", "q-0", "q-0", "q-1"]  # p-2 lost; q-1 failed, stored
    delivered = {"g1": ["p-0", "p-0", "p-1", "q-0", "q-1"], "g2": ["p-0", "p-1", "q-0"]}
    r = audit(acked, stored, delivered)
    assert (r["acked"], r["stored"], r["lost"], r["lost_examples"]) == (4, 7, 1, ["p-2"])
    assert r["stored_unacked"] == 1
    assert r["log_duplicates"] == 3 and r["log_duplicates_by_producer"] == {"p": 1, "q": 2}
    assert r["groups"]["g1"] == {
        "delivered": 5,
        "unique": 4,
        "missing": 1,
        "duplicates": 1,
        "not_in_log": 0,
    }
    assert r["groups"]["g2"]["missing"] == 1 and r["groups"]["g2"]["duplicates"] == 0


def test_audit_of_a_clean_run():
    ids = [f"p-{i}" for i in range(1000)]
    r = audit(ids, ids, {"g": ids + ids[:10]})
    assert (r["lost"], r["log_duplicates"], r["stored_unacked"]) == (0, 0, 0)
    assert r["groups"]["g"]["missing"] == 0 and r["groups"]["g"]["duplicates"] == 10


def test_ids_with_dashes_in_the_producer_name():
    r = audit(["p-sync-1"], ["p-sync-1", "p-sync-1"], {})
    assert r["log_duplicates_by_producer"] == {"p-sync": 1}
    assert duplicates(["a", "a", "a", "b"]) == 2


def test_percentile_nearest_rank():
    values = list(range(1, 101))
    assert (percentile(values, 50), percentile(values, 99), percentile(values, 100)) == (
        50,
        99,
        100,
    )
    assert percentile([5.0], 99) == 5.0 and percentile([], 99) is None


def test_rss_of_a_live_and_a_gone_process():
    assert rss_mb(os.getpid()) > 5
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert rss_mb(child.pid) is None
