"""The demo README's first command runs: every message produced is read back three ways."""

import re

from kclient.demo import main


def test_demo_reads_back_everything(capsys):
    assert main(["--messages", "2000"]) == 0
    out = capsys.readouterr().out
    assert "2003 of 2003 messages read" in out and "2003 of 2003 messages polled" in out
    assert "produce key='alice'" in out
    assert "2000 acknowledged, 0 failed" in out
    sizes = [int(n) for n in re.findall(r"\.log  (\d+) bytes", out)]
    assert len(sizes) == 3 and all(s > 0 for s in sizes)
