"""KafkaServer's own helpers, without starting Kafka."""

from __future__ import annotations

import base64

from kclient.testing.kafka import _random_cluster_id


def test_cluster_ids_never_look_like_an_option():
    # Kafka's storage tool reads "-t -xyz" as a missing argument: 1 random id in 64 starts
    # with "-", so 5,000 draws would all but surely hit one if it were not excluded
    ids = [_random_cluster_id() for _ in range(5000)]
    assert not [i for i in ids if i.startswith("-")]
    assert all(len(base64.urlsafe_b64decode(i + "==")) == 16 for i in ids)
    assert len(set(ids)) == len(ids)
