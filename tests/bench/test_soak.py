"""A 30-second ``kclient bench soak``: broker killed -9 every 10 s, a consumer of each group
killed -9, a ZooKeeper session expired; nothing acknowledged is lost and both groups get
everything."""

import pytest

from kclient.bench.soak import run, summary
from kclient.testing import zookeeper_available
from tests.needs import requires

_NO_ZK = "ZooKeeper not installed (apt-get install zookeeper)"
pytestmark = [pytest.mark.zookeeper, requires(None if zookeeper_available() else _NO_ZK)]


def test_soak_smoke(tmp_path):
    report = run(
        minutes=0.5, kill_every=10, sample_every=10, rate=20, workdir=tmp_path, log=lambda *_: None
    )
    text = (
        summary(report)
        + f"\nevents {report['events']}\n"
        + "\n".join(
            f"--- {out.name}\n" + out.read_text(errors="replace")[-1500:]
            for out in sorted(tmp_path.glob("*.out"))
            if out.name != "broker.out"
        )
    )
    assert report["lost"] == 0, text
    assert report["acked"] > 500, text
    assert report["log_duplicates_by_producer"].get("p-idem", 0) == 0, text
    for group in ("soak-zk", "soak-group"):
        assert report["groups"][group]["missing"] == 0, text
    events = [e["event"] for e in report["events"]]
    assert events.count("broker killed -9 and restarted") == 2, events
    assert "consumer gc0 killed -9 and restarted" in events
    assert "consumer zk1 killed -9 and restarted" in events
    expiry = next(e for e in report["events"] if "session expired" in e["event"])
    assert expiry["renewed"], expiry
    assert report["latency"]["p99_ms"] is not None
