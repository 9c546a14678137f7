"""DescribeConfigs (key 32): the configuration of topics and brokers, with sources and types."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import Api
from ..schema import Field as F
from ..types import BOOLEAN, INT8, INT16, INT32, STRING, ArrayOf

#: ConfigResource types.
TOPIC_RESOURCE, BROKER_RESOURCE, BROKER_LOGGER_RESOURCE, GROUP_RESOURCE = 2, 4, 8, 32

if TYPE_CHECKING:
    from ..messages import DescribeConfigsRequest, DescribeConfigsResponse

DESCRIBE_CONFIGS: Api[DescribeConfigsRequest, DescribeConfigsResponse] = Api(
    32,
    "DescribeConfigs",
    "0-4",
    flexible=4,
    request=[
        F(
            "resources",
            [
                F("resource_type", INT8),
                F("resource_name", STRING),
                F("configuration_keys", ArrayOf(STRING), nullable="0+", default=None),
            ],
        ),
        F("include_synonyms", BOOLEAN, "1+", default=False),
        F("include_documentation", BOOLEAN, "3+", default=False),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F(
            "results",
            [
                F("error_code", INT16),
                F("error_message", STRING, nullable="0+", default=None),
                F("resource_type", INT8),
                F("resource_name", STRING),
                F(
                    "configs",
                    [
                        F("name", STRING),
                        F("value", STRING, nullable="0+", default=None),
                        F("read_only", BOOLEAN),
                        F("is_default", BOOLEAN, "0", default=False),
                        F("config_source", INT8, "1+", default=-1),
                        F("is_sensitive", BOOLEAN),
                        F(
                            "synonyms",
                            [
                                F("name", STRING),
                                F("value", STRING, nullable="0+", default=None),
                                F("source", INT8),
                            ],
                            "1+",
                        ),
                        F("config_type", INT8, "3+", default=0),
                        F("documentation", STRING, "3+", nullable="0+", default=None),
                    ],
                ),
            ],
        ),
    ],
)
