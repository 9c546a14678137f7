"""The mini-broker's storage: segmented, indexed, recoverable partition logs.

Imports only ``kclient.protocol`` (and this package), per the broker's layering rule.
"""

from kclient.broker.log.config import LogConfig, parse_format_version
from kclient.broker.log.index import OffsetIndex
from kclient.broker.log.log import EARLIEST, LATEST, AppendInfo, Log
from kclient.broker.log.manager import LogManager
from kclient.broker.log.region import FileRegion
from kclient.broker.log.segment import LogSegment

__all__ = [
    "AppendInfo",
    "EARLIEST",
    "FileRegion",
    "LATEST",
    "Log",
    "LogConfig",
    "LogManager",
    "LogSegment",
    "OffsetIndex",
    "parse_format_version",
]
