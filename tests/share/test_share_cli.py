"""``kclient consume --share-group`` and ``kclient share-groups`` against the mini-broker."""

from __future__ import annotations

from integration.share_scenarios import new_group, produce
from kclient.admin import AdminClient
from kclient.cli import main
from tests.share.test_share_minibroker import broker  # noqa: F401 - the module's broker


class _Cli:
    """``kclient`` in this process (a subprocess per call costs seconds on a busy machine)."""

    def __init__(self, bootstrap, capfd):
        self.bootstrap, self.capfd = bootstrap, capfd

    def __call__(self, *args, check=0):
        self.capfd.readouterr()
        code = main([*args, "-b", self.bootstrap])
        out, err = self.capfd.readouterr()
        assert code == check, (code, out, err)
        return out, err

    def out(self, *args):
        return self(*args)[0]


def test_consume_describe_reset_and_delete_a_share_group(broker, capfd):  # noqa: F811
    bootstrap = broker.bootstrap
    cli = _Cli(bootstrap, capfd)
    with AdminClient(bootstrap) as admin:
        admin.create_topic("jobs", 1)
    produce(bootstrap, "jobs", 5, 1)
    group = new_group(bootstrap)
    assert cli.out("consume", "jobs", "--share-group", group, "-e").split() == [
        "v0",
        "v1",
        "v2",
        "v3",
        "v4",
    ]
    table = cli.out("share-groups", "describe", group)
    assert [line.split()[:4] for line in table.splitlines()[1:]] == [[group, "jobs", "0", "5"]]
    cli.out("share-groups", "reset-offsets", group, "-t", "jobs", "--to-offset", "3", "--execute")
    assert cli.out("consume", "jobs", "--share-group", group, "-e", "-c", "1").split() == ["v3"]
    cli.out("share-groups", "delete-offsets", group, "-t", "jobs")
    assert cli.out("share-groups", "describe", group).splitlines()[1:] == []
    _, err = cli("share-groups", "reset-offsets", group, "-t", "jobs", check=2)
    assert "--to-earliest" in err
