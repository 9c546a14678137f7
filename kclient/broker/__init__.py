"""The reference mini-broker: a real Kafka-protocol server (MiniBroker) and N of them (MiniCluster)."""

from .minicluster import MiniCluster
from .server import MiniBroker

__all__ = ["MiniBroker", "MiniCluster"]
