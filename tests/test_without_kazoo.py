"""``import kclient`` works without kazoo installed: the ZooKeeper code is imported when used,
and using it without kazoo says what to install (issue 22)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

BLOCK_KAZOO = """
import sys
class NoKazoo:
    def find_spec(self, name, path=None, target=None):
        if name == "kazoo" or name.startswith("kazoo."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, NoKazoo())
"""


def _run(body: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCK_KAZOO + body],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_package_and_its_faces_import_without_kazoo():
    out = _run(
        "import kclient, kclient.admin, kclient.aio, kclient.broker, kclient.cli\n"
        "from kclient import Consumer, Producer, SimpleConsumer\n"
        "from kclient.consumer import GroupConsumerConnector\n"
        "assert 'kazoo' not in sys.modules\n"
        "print('ok')"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_zookeeper_coordination_without_kazoo_names_what_to_install():
    out = _run(
        "from kclient import consumer\n"
        "try:\n"
        "    consumer.create({'zookeeper.connect': '127.0.0.1:1', 'group.id': 'g'})\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    assert out.returncode == 0, out.stderr
    assert "No module named 'kazoo'" in out.stdout or "pip install kazoo" in out.stdout, out.stdout


def test_the_zookeeper_connector_is_still_named_by_the_package():
    from kclient import consumer
    from kclient.consumer.zk_connector import ZookeeperConsumerConnector

    assert consumer.ZookeeperConsumerConnector is ZookeeperConsumerConnector
