"""A short chaos run on the mini-broker's MiniCluster (issue 25; long ones: ``kclient bench chaos
--minutes N``, docs/reliability.md): producers (idempotent, asyncio, transactional) and
consumers (two groups, one of AIOConsumers) while each fault comes once - a leader killed and
restarted, a broker silent, every client connection cut, the whole cluster restarted - and the
history check finds nothing lost, misplaced, duplicated, aborted-but-visible, out of order or
undelivered, no client crashed and every client stopped within its bound."""

from __future__ import annotations

from kclient.bench.chaos import FAULTS, run, summary


def test_a_short_mini_chaos_run_keeps_every_promise(tmp_path):
    lines: list[str] = []
    report = run("mini", seconds=20.0, fault_every=4.0, workdir=tmp_path, log=lines.append)
    assert report["faults"] == len(FAULTS), "\n".join(lines)
    assert report["failures"] == [], summary(report) + "\n" + "\n".join(lines)
    assert report["acked"] > 0 and report["lost"] == [], summary(report)
