"""Kafka error codes as exceptions (kclient.protocol.errors); client errors (kclient.errors)."""

from __future__ import annotations

import ast
import pickle
from pathlib import Path

import pytest

import kclient.errors as client_errors
import kclient.protocol.errors as perr
from kclient.protocol.errors import (
    BrokerResponseError,
    CorruptRecordError,
    KafkaError,
    OffsetOutOfRangeError,
    UnrecognizedBrokerError,
    code_for_exception,
    error_for_code,
    raise_for_code,
)

# Facts from Kafka's protocol error table (Errors.java): code, Kafka name, expected class.
KNOWN = [
    (-1, "UNKNOWN_SERVER_ERROR", "UnknownServerError"),
    (1, "OFFSET_OUT_OF_RANGE", "OffsetOutOfRangeError"),
    (2, "CORRUPT_MESSAGE", "CorruptRecordError"),
    (3, "UNKNOWN_TOPIC_OR_PARTITION", "UnknownTopicOrPartitionError"),
    (4, "INVALID_FETCH_SIZE", "InvalidFetchSizeError"),
    (5, "LEADER_NOT_AVAILABLE", "LeaderNotAvailableError"),
    (6, "NOT_LEADER_OR_FOLLOWER", "NotLeaderForPartitionError"),
    (7, "REQUEST_TIMED_OUT", "RequestTimedOutError"),
    (8, "BROKER_NOT_AVAILABLE", "BrokerNotAvailableError"),
    (9, "REPLICA_NOT_AVAILABLE", "ReplicaNotAvailableError"),
    (10, "MESSAGE_TOO_LARGE", "MessageSizeTooLargeError"),
    (12, "OFFSET_METADATA_TOO_LARGE", "OffsetMetadataTooLargeError"),
    (14, "COORDINATOR_LOAD_IN_PROGRESS", "CoordinatorLoadInProgressError"),
    (15, "COORDINATOR_NOT_AVAILABLE", "CoordinatorNotAvailableError"),
    (16, "NOT_COORDINATOR", "NotCoordinatorError"),
    (17, "INVALID_TOPIC_EXCEPTION", "InvalidTopicError"),
    (18, "RECORD_LIST_TOO_LARGE", "RecordListTooLargeError"),
    (19, "NOT_ENOUGH_REPLICAS", "NotEnoughReplicasError"),
    (20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", "NotEnoughReplicasAfterAppendError"),
    (21, "INVALID_REQUIRED_ACKS", "InvalidRequiredAcksError"),
    (22, "ILLEGAL_GENERATION", "IllegalGenerationError"),
    (23, "INCONSISTENT_GROUP_PROTOCOL", "InconsistentGroupProtocolError"),
    (25, "UNKNOWN_MEMBER_ID", "UnknownMemberIdError"),
    (26, "INVALID_SESSION_TIMEOUT", "InvalidSessionTimeoutError"),
    (27, "REBALANCE_IN_PROGRESS", "RebalanceInProgressError"),
    (29, "TOPIC_AUTHORIZATION_FAILED", "TopicAuthorizationFailedError"),
    (35, "UNSUPPORTED_VERSION", "UnsupportedVersionError"),
    (36, "TOPIC_ALREADY_EXISTS", "TopicAlreadyExistsError"),
    (37, "INVALID_PARTITIONS", "InvalidPartitionsError"),
    (40, "INVALID_CONFIG", "InvalidConfigurationError"),
    (41, "NOT_CONTROLLER", "NotControllerError"),
    (42, "INVALID_REQUEST", "InvalidRequestError"),
    (43, "UNSUPPORTED_FOR_MESSAGE_FORMAT", "UnsupportedForMessageFormatError"),
    (56, "KAFKA_STORAGE_ERROR", "KafkaStorageError"),
    (74, "FENCED_LEADER_EPOCH", "FencedLeaderEpochError"),
    (75, "UNKNOWN_LEADER_EPOCH", "UnknownLeaderEpochError"),
    (79, "MEMBER_ID_REQUIRED", "MemberIdRequiredError"),
    (87, "INVALID_RECORD", "InvalidRecordError"),
    (89, "THROTTLING_QUOTA_EXCEEDED", "ThrottlingQuotaExceededError"),
    (90, "PRODUCER_FENCED", "ProducerFencedError"),
    (100, "UNKNOWN_TOPIC_ID", "UnknownTopicIdError"),
    (128, "INVALID_REGULAR_EXPRESSION", "InvalidRegularExpressionError"),
]
RETRIABLE = [2, 3, 5, 6, 7, 9, 13, 14, 15, 16, 19, 20, 41, 56, 74, 75, 89]
NOT_RETRIABLE = [-1, 1, 4, 8, 10, 12, 17, 18, 21, 22, 25, 27, 29, 35, 36, 42, 87, 90]


@pytest.mark.parametrize("code,name,cls_name", KNOWN)
def test_code_maps_to_named_class(code, name, cls_name):
    cls = error_for_code(code)
    assert cls.__name__ == cls_name
    assert cls is getattr(perr, cls_name)
    assert (cls.errno, cls.message) == (code, name)


def test_every_code_from_minus_one_to_128_has_its_own_class():
    codes = [c for c in range(-1, 129) if c not in (0, 99)]  # 0 is NONE; Kafka never used 99
    classes = [error_for_code(c) for c in codes]
    assert not any(issubclass(c, UnrecognizedBrokerError) for c in classes)
    assert [c.errno for c in classes] == codes
    assert len({c.__name__ for c in classes}) == len(codes)
    assert len({c.message for c in classes}) == len(codes)


def test_all_error_classes_in_code_order_and_exported():
    table = perr.all_error_classes()
    assert list(table) == sorted(table)
    assert len(table) == 128
    for cls in table.values():
        assert cls.__name__ in perr.__all__
        assert cls.description and cls.description == " ".join(cls.__doc__.split())


@pytest.mark.parametrize("code", RETRIABLE)
def test_retriable_codes(code):
    assert error_for_code(code).retriable is True


@pytest.mark.parametrize("code", NOT_RETRIABLE)
def test_not_retriable_codes(code):
    assert error_for_code(code).retriable is False


def test_invalid_metadata_marks_leader_errors_only():
    assert {c for c in (3, 5, 6, 9) if error_for_code(c).invalid_metadata} == {3, 5, 6, 9}
    assert not error_for_code(1).invalid_metadata
    assert not error_for_code(27).invalid_metadata


def test_str_names_kafka_name_code_context_and_description():
    text = str(OffsetOutOfRangeError("topic events partition 0"))
    assert text.startswith("OFFSET_OUT_OF_RANGE (error 1) for topic events partition 0: ")
    assert "not within the range of offsets" in text


def test_str_without_context():
    assert str(perr.RebalanceInProgressError()).startswith("REBALANCE_IN_PROGRESS (error 27): ")


def test_corrupt_record_error_keeps_and_names_offset():
    err = CorruptRecordError("events-3", offset=1234)
    assert err.offset == 1234
    assert "CORRUPT_MESSAGE (error 2) for events-3 at offset 1234: " in str(err)
    assert "CRC" in str(err)


def test_corrupt_record_error_without_offset():
    err = CorruptRecordError("events-3")
    assert err.offset is None
    assert "offset" not in str(err).split(":")[0]


def test_raise_for_code_zero_is_silent_and_nonzero_raises_with_context():
    assert raise_for_code(0, "anything") is None
    with pytest.raises(perr.NotLeaderForPartitionError) as info:
        raise_for_code(6, "events-1")
    assert info.value.context == "events-1"
    assert "NOT_LEADER_OR_FOLLOWER" in str(info.value) and "events-1" in str(info.value)


def test_unknown_code_gets_generic_class_keeping_the_code():
    cls = error_for_code(4242)
    assert issubclass(cls, UnrecognizedBrokerError) and issubclass(cls, BrokerResponseError)
    assert cls.errno == 4242
    assert error_for_code(4242) is cls
    assert error_for_code(4243) is not cls
    with pytest.raises(UnrecognizedBrokerError, match=r"\(error 4242\) for t-0"):
        raise_for_code(4242, "t-0")


def test_error_for_code_zero_is_not_an_error():
    with pytest.raises(ValueError, match="NONE"):
        error_for_code(0)


def test_code_for_exception():
    assert code_for_exception(perr.UnknownTopicOrPartitionError("x")) == 3
    assert code_for_exception(error_for_code(777)()) == 777
    assert code_for_exception(RuntimeError("boom")) == -1


def test_hierarchy():
    assert issubclass(BrokerResponseError, KafkaError)
    for cls in (perr.ProtocolDecodeError, perr.UnsupportedCodecError):
        assert issubclass(cls, KafkaError) and not issubclass(cls, BrokerResponseError)
    assert all(issubclass(c, BrokerResponseError) for c in perr.all_error_classes().values())


def test_old_names_are_aliases():
    assert perr.NotLeaderOrFollowerError is perr.NotLeaderForPartitionError
    assert perr.InvalidMessageError is CorruptRecordError
    assert perr.ConsumerCoordinatorNotAvailableError is perr.CoordinatorNotAvailableError
    assert perr.NotCoordinatorForConsumerError is perr.NotCoordinatorError
    assert perr.OffsetsLoadInProgressError is perr.CoordinatorLoadInProgressError
    assert perr.MessageSetSizeTooLargeError is perr.RecordListTooLargeError


def test_user_subclass_inherits_code_and_does_not_steal_registration():
    class MyOffsetError(OffsetOutOfRangeError):
        pass

    assert MyOffsetError.errno == 1 and MyOffsetError.message == "OFFSET_OUT_OF_RANGE"
    assert error_for_code(1) is OffsetOutOfRangeError


@pytest.mark.parametrize(
    "exc",
    [
        OffsetOutOfRangeError("events-0"),
        CorruptRecordError("events-0", offset=7),
        error_for_code(3131)("t-9"),
        perr.ProtocolDecodeError("truncated frame: need 40 bytes, have 12"),
    ],
)
def test_pickle_round_trip_keeps_class_attributes_and_text(exc):
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is type(exc)
    assert str(back) == str(exc)
    assert back.__dict__ == exc.__dict__


def test_protocol_errors_import_nothing_of_kclient():
    tree = ast.parse(Path(perr.__file__).read_text())
    imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in imported if m.startswith("kclient")]


# ---------------------------------------------------------------- client errors (kclient.errors)


def test_client_errors_reexport_protocol_errors():
    for name in perr.__all__:
        assert getattr(client_errors, name) is getattr(perr, name)
    assert set(perr.__all__) <= set(client_errors.__all__)


@pytest.mark.parametrize(
    "name",
    [
        "KafkaConnectionError",
        "KafkaTimeoutError",
        "NoBrokersAvailableError",
        "InvalidConfigError",
        "FailedToSendMessageError",
        "QueueFullError",
        "ConsumerTimeoutError",
        "ConsumerRebalanceFailedError",
        "IllegalStateError",
        "ZooKeeperError",
    ],
)
def test_client_errors_share_the_base(name):
    cls = getattr(client_errors, name)
    assert issubclass(cls, KafkaError) and not issubclass(cls, BrokerResponseError)
    assert name in client_errors.__all__


def test_connection_error_names_host_and_port():
    err = client_errors.KafkaConnectionError("10.0.0.5", 9092, "connection refused")
    assert (err.host, err.port) == ("10.0.0.5", 9092)
    assert str(err) == "connection to 10.0.0.5:9092 failed: connection refused"
    assert err.retriable


def test_timeout_error_is_also_builtin_timeout():
    with pytest.raises(TimeoutError):
        raise client_errors.KafkaTimeoutError("metadata for 'events' not available after 60000 ms")


def test_no_brokers_available_lists_what_was_tried():
    err = client_errors.NoBrokersAvailableError(brokers=[("a", 9092), ("b", 9093)])
    assert str(err) == "no brokers available (tried a:9092, b:9093)"


def test_invalid_config_error_is_value_error_with_attributes():
    err = client_errors.InvalidConfigError("bad acks", "acks", 5, "-1, 0, 1")
    assert isinstance(err, ValueError) and isinstance(err, KafkaError)
    assert (err.key, err.value, err.allowed) == ("acks", 5, "-1, 0, 1")
    assert pickle.loads(pickle.dumps(err)).allowed == "-1, 0, 1"


def test_failed_to_send_names_each_message_and_error():
    failed = [
        ("msg-a", perr.LeaderNotAvailableError("events-0")),
        ("msg-b", OSError("broken pipe")),
    ]
    err = client_errors.FailedToSendMessageError(failed)
    assert err.failed == failed
    text = str(err)
    assert text.startswith("failed to send 2 message(s)")
    assert "'msg-a': LEADER_NOT_AVAILABLE for events-0" in text
    assert "'msg-b': OSError: broken pipe" in text


def test_failed_to_send_caps_the_listing():
    failed = [(f"m{i}", RuntimeError("x")) for i in range(25)]
    text = str(client_errors.FailedToSendMessageError(failed, "3 retries exhausted"))
    assert text.startswith("3 retries exhausted")
    assert "'m9'" in text and "'m10'" not in text and "... and 15 more" in text


def test_error_modules_all_is_a_static_list_naming_every_class_and_alias():
    """``__all__`` is a literal (type checkers read it) and misses no class or old name."""
    from kclient.protocol import error_base, error_codes

    for module in (error_base, error_codes):
        tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
        (value,) = [
            n.value
            for n in tree.body
            if isinstance(n, ast.Assign)
            and [getattr(t, "id", None) for t in n.targets] == ["__all__"]
        ]
        assert isinstance(value, ast.List)
        assert all(isinstance(e, ast.Constant) for e in value.elts)
    defined = {
        name
        for name, v in vars(error_codes).items()
        if isinstance(v, type)
        and issubclass(v, BrokerResponseError)
        and v is not BrokerResponseError
    }
    assert len(error_codes.__all__) == len(set(error_codes.__all__))
    assert set(error_codes.__all__) == defined
    assert {c.__name__ for c in perr.all_error_classes().values()} <= defined
    assert set(perr.__all__) == set(error_base.__all__) | defined
