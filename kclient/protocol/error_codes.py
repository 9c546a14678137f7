"""One exception class per Kafka error code (Kafka's ``Errors`` table, -1 .. 128), and the
0.8-era alias names; each class registers itself with :mod:`.error_base` by its ``errno``."""

from __future__ import annotations

from typing import Any

from .error_base import BrokerResponseError

# a table, one class per error code, kept one row per class:
# fmt: off


class UnknownServerError(BrokerResponseError, errno=-1, message="UNKNOWN_SERVER_ERROR"):
    """The server experienced an unexpected error when processing the request."""


class OffsetOutOfRangeError(BrokerResponseError, errno=1, message="OFFSET_OUT_OF_RANGE"):
    """The requested offset is not within the range of offsets maintained by the server."""


class CorruptRecordError(
    BrokerResponseError, errno=2, message="CORRUPT_MESSAGE",
    retriable=True,
):
    """This message has failed its CRC checksum, exceeds the valid size, has a null key for a
    compacted topic, or is otherwise corrupt.
    """

    #: where reading can resume past the corrupt entry, when a client reader worked it out
    next_offset: int | None = None

    def __init__(self, context: str = "", *args: Any, offset: int | None = None) -> None:
        """Also keep the ``offset`` of the corrupt entry, when known, and name it in the text."""
        super().__init__(context, *args)
        self.offset = offset

    def __str__(self) -> str:
        """As the base, with ``at offset N`` after the context."""
        if self.offset is None:
            return super().__str__()
        about = f" for {self.context}" if self.context else ""
        return f"{self.message} (error {self.errno}){about} at offset {self.offset}: " + (
            self.description
        )


class UnknownTopicOrPartitionError(
    BrokerResponseError, errno=3, message="UNKNOWN_TOPIC_OR_PARTITION",
    retriable=True, invalid_metadata=True,
):
    """This server does not host this topic-partition."""


class InvalidFetchSizeError(BrokerResponseError, errno=4, message="INVALID_FETCH_SIZE"):
    """The requested fetch size is invalid."""


class LeaderNotAvailableError(
    BrokerResponseError, errno=5, message="LEADER_NOT_AVAILABLE",
    retriable=True, invalid_metadata=True,
):
    """There is no leader for this topic-partition as we are in the middle of a leadership
    election.
    """


class NotLeaderForPartitionError(
    BrokerResponseError, errno=6, message="NOT_LEADER_OR_FOLLOWER",
    retriable=True, invalid_metadata=True,
):
    """For requests intended only for the leader, this error indicates that the broker is not the
    current leader. For requests intended for any replica, this error indicates that the broker
    is not a replica of the topic partition.
    """


class RequestTimedOutError(
    BrokerResponseError, errno=7, message="REQUEST_TIMED_OUT",
    retriable=True,
):
    """The request timed out."""


class BrokerNotAvailableError(BrokerResponseError, errno=8, message="BROKER_NOT_AVAILABLE"):
    """The broker is not available."""


class ReplicaNotAvailableError(
    BrokerResponseError, errno=9, message="REPLICA_NOT_AVAILABLE",
    retriable=True, invalid_metadata=True,
):
    """The replica is not available for the requested topic-partition. Produce/Fetch requests and
    other requests intended only for the leader or follower return NOT_LEADER_OR_FOLLOWER if the
    broker is not a replica of the topic-partition.
    """


class MessageSizeTooLargeError(BrokerResponseError, errno=10, message="MESSAGE_TOO_LARGE"):
    """The request included a message larger than the max message size the server will accept."""

    size: int | None    # the bytes the message needs, when a fetcher knows (kclient.simple)


class StaleControllerEpochError(BrokerResponseError, errno=11, message="STALE_CONTROLLER_EPOCH"):
    """The controller moved to another broker."""


class OffsetMetadataTooLargeError(
    BrokerResponseError, errno=12, message="OFFSET_METADATA_TOO_LARGE",
):
    """The metadata field of the offset request was too large."""


class NetworkExceptionError(
    BrokerResponseError, errno=13, message="NETWORK_EXCEPTION",
    retriable=True, invalid_metadata=True,
):
    """The server disconnected before a response was received."""


class CoordinatorLoadInProgressError(
    BrokerResponseError, errno=14, message="COORDINATOR_LOAD_IN_PROGRESS",
    retriable=True,
):
    """The coordinator is loading and hence can't process requests."""


class CoordinatorNotAvailableError(
    BrokerResponseError, errno=15, message="COORDINATOR_NOT_AVAILABLE",
    retriable=True,
):
    """The coordinator is not available."""


class NotCoordinatorError(
    BrokerResponseError, errno=16, message="NOT_COORDINATOR",
    retriable=True,
):
    """This is not the correct coordinator."""


class InvalidTopicError(BrokerResponseError, errno=17, message="INVALID_TOPIC_EXCEPTION"):
    """The request attempted to perform an operation on an invalid topic."""


class RecordListTooLargeError(BrokerResponseError, errno=18, message="RECORD_LIST_TOO_LARGE"):
    """The request included message batch larger than the configured segment size on the server."""


class NotEnoughReplicasError(
    BrokerResponseError, errno=19, message="NOT_ENOUGH_REPLICAS",
    retriable=True,
):
    """Messages are rejected since there are fewer in-sync replicas than required."""


class NotEnoughReplicasAfterAppendError(
    BrokerResponseError, errno=20, message="NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    retriable=True,
):
    """Messages are written to the log, but to fewer in-sync replicas than required."""


class InvalidRequiredAcksError(BrokerResponseError, errno=21, message="INVALID_REQUIRED_ACKS"):
    """Produce request specified an invalid value for required acks."""


class IllegalGenerationError(BrokerResponseError, errno=22, message="ILLEGAL_GENERATION"):
    """Specified group generation id is not valid."""


class InconsistentGroupProtocolError(
    BrokerResponseError, errno=23, message="INCONSISTENT_GROUP_PROTOCOL",
):
    """The group member's supported protocols are incompatible with those of existing members or
    first group member tried to join with empty protocol type or empty protocol list.
    """


class InvalidGroupIdError(BrokerResponseError, errno=24, message="INVALID_GROUP_ID"):
    """The configured groupId is invalid."""


class UnknownMemberIdError(BrokerResponseError, errno=25, message="UNKNOWN_MEMBER_ID"):
    """The coordinator is not aware of this member."""


class InvalidSessionTimeoutError(BrokerResponseError, errno=26, message="INVALID_SESSION_TIMEOUT"):
    """The session timeout is not within the range allowed by the broker (as configured by
    group.min.session.timeout.ms and group.max.session.timeout.ms).
    """


class RebalanceInProgressError(BrokerResponseError, errno=27, message="REBALANCE_IN_PROGRESS"):
    """The group is rebalancing, so a rejoin is needed."""


class InvalidCommitOffsetSizeError(
    BrokerResponseError, errno=28, message="INVALID_COMMIT_OFFSET_SIZE",
):
    """The committing offset data size is not valid."""


class TopicAuthorizationFailedError(
    BrokerResponseError, errno=29, message="TOPIC_AUTHORIZATION_FAILED",
):
    """Topic authorization failed."""


class GroupAuthorizationFailedError(
    BrokerResponseError, errno=30, message="GROUP_AUTHORIZATION_FAILED",
):
    """Group authorization failed."""


class ClusterAuthorizationFailedError(
    BrokerResponseError, errno=31, message="CLUSTER_AUTHORIZATION_FAILED",
):
    """Cluster authorization failed."""


class InvalidTimestampError(BrokerResponseError, errno=32, message="INVALID_TIMESTAMP"):
    """The timestamp of the message is out of acceptable range."""


class UnsupportedSaslMechanismError(
    BrokerResponseError, errno=33, message="UNSUPPORTED_SASL_MECHANISM",
):
    """The broker does not support the requested SASL mechanism."""


class IllegalSaslStateError(BrokerResponseError, errno=34, message="ILLEGAL_SASL_STATE"):
    """Request is not valid given the current SASL state."""


class UnsupportedVersionError(BrokerResponseError, errno=35, message="UNSUPPORTED_VERSION"):
    """The version of API is not supported."""


class TopicAlreadyExistsError(BrokerResponseError, errno=36, message="TOPIC_ALREADY_EXISTS"):
    """Topic with this name already exists."""


class InvalidPartitionsError(BrokerResponseError, errno=37, message="INVALID_PARTITIONS"):
    """Number of partitions is below 1."""


class InvalidReplicationFactorError(
    BrokerResponseError, errno=38, message="INVALID_REPLICATION_FACTOR",
):
    """Replication factor is below 1 or larger than the number of available brokers."""


class InvalidReplicaAssignmentError(
    BrokerResponseError, errno=39, message="INVALID_REPLICA_ASSIGNMENT",
):
    """Replica assignment is invalid."""


class InvalidConfigurationError(BrokerResponseError, errno=40, message="INVALID_CONFIG"):
    """Configuration is invalid."""


class NotControllerError(BrokerResponseError, errno=41, message="NOT_CONTROLLER", retriable=True):
    """This is not the correct controller for this cluster."""


class InvalidRequestError(BrokerResponseError, errno=42, message="INVALID_REQUEST"):
    """This most likely occurs because of a request being malformed by the client library or the
    message was sent to an incompatible broker. See the broker logs for more details.
    """


class UnsupportedForMessageFormatError(
    BrokerResponseError, errno=43, message="UNSUPPORTED_FOR_MESSAGE_FORMAT",
):
    """The message format version on the broker does not support the request."""


class PolicyViolationError(BrokerResponseError, errno=44, message="POLICY_VIOLATION"):
    """Request parameters do not satisfy the configured policy."""


class OutOfOrderSequenceNumberError(
    BrokerResponseError, errno=45, message="OUT_OF_ORDER_SEQUENCE_NUMBER",
):
    """The broker received an out of order sequence number."""


class DuplicateSequenceNumberError(
    BrokerResponseError, errno=46, message="DUPLICATE_SEQUENCE_NUMBER",
):
    """The broker received a duplicate sequence number."""


class InvalidProducerEpochError(BrokerResponseError, errno=47, message="INVALID_PRODUCER_EPOCH"):
    """Producer attempted to produce with an old epoch."""


class InvalidTxnStateError(BrokerResponseError, errno=48, message="INVALID_TXN_STATE"):
    """The producer attempted a transactional operation in an invalid state."""


class InvalidProducerIdMappingError(
    BrokerResponseError, errno=49, message="INVALID_PRODUCER_ID_MAPPING",
):
    """The producer attempted to use a producer id which is not currently assigned to its
    transactional id.
    """


class InvalidTransactionTimeoutError(
    BrokerResponseError, errno=50, message="INVALID_TRANSACTION_TIMEOUT",
):
    """The transaction timeout is larger than the maximum value allowed by the broker (as
    configured by transaction.max.timeout.ms).
    """


class ConcurrentTransactionsError(
    BrokerResponseError, errno=51, message="CONCURRENT_TRANSACTIONS",
    retriable=True,
):
    """The producer attempted to update a transaction while another concurrent operation on the
    same transaction was ongoing.
    """


class TransactionCoordinatorFencedError(
    BrokerResponseError, errno=52, message="TRANSACTION_COORDINATOR_FENCED",
):
    """Indicates that the transaction coordinator sending a WriteTxnMarker is no longer the current
    coordinator for a given producer.
    """


class TransactionalIdAuthorizationFailedError(
    BrokerResponseError, errno=53, message="TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
):
    """Transactional Id authorization failed."""


class SecurityDisabledError(BrokerResponseError, errno=54, message="SECURITY_DISABLED"):
    """Security features are disabled."""


class OperationNotAttemptedError(BrokerResponseError, errno=55, message="OPERATION_NOT_ATTEMPTED"):
    """The broker did not attempt to execute this operation. This may happen for batched RPCs where
    some operations in the batch failed, causing the broker to respond without trying the rest.
    """


class KafkaStorageError(
    BrokerResponseError, errno=56, message="KAFKA_STORAGE_ERROR",
    retriable=True, invalid_metadata=True,
):
    """Disk error when trying to access log file on the disk."""


class LogDirNotFoundError(BrokerResponseError, errno=57, message="LOG_DIR_NOT_FOUND"):
    """The user-specified log directory is not found in the broker config."""


class SaslAuthenticationFailedError(
    BrokerResponseError, errno=58, message="SASL_AUTHENTICATION_FAILED",
):
    """SASL Authentication failed."""


class UnknownProducerIdError(BrokerResponseError, errno=59, message="UNKNOWN_PRODUCER_ID"):
    """This exception is raised by the broker if it could not locate the producer metadata
    associated with the producerId in question. This could happen if, for instance, the
    producer's records were deleted because their retention time had elapsed. Once the last
    records of the producerId are removed, the producer's metadata is removed from the broker,
    and future appends by the producer will return this exception.
    """


class ReassignmentInProgressError(
    BrokerResponseError, errno=60, message="REASSIGNMENT_IN_PROGRESS",
):
    """A partition reassignment is in progress."""


class DelegationTokenAuthDisabledError(
    BrokerResponseError, errno=61, message="DELEGATION_TOKEN_AUTH_DISABLED",
):
    """Delegation Token feature is not enabled."""


class DelegationTokenNotFoundError(
    BrokerResponseError, errno=62, message="DELEGATION_TOKEN_NOT_FOUND",
):
    """Delegation Token is not found on server."""


class DelegationTokenOwnerMismatchError(
    BrokerResponseError, errno=63, message="DELEGATION_TOKEN_OWNER_MISMATCH",
):
    """Specified Principal is not valid Owner/Renewer."""


class DelegationTokenRequestNotAllowedError(
    BrokerResponseError, errno=64, message="DELEGATION_TOKEN_REQUEST_NOT_ALLOWED",
):
    """Delegation Token requests are not allowed on PLAINTEXT/1-way SSL channels and on delegation
    token authenticated channels.
    """


class DelegationTokenAuthorizationFailedError(
    BrokerResponseError, errno=65, message="DELEGATION_TOKEN_AUTHORIZATION_FAILED",
):
    """Delegation Token authorization failed."""


class DelegationTokenExpiredError(
    BrokerResponseError, errno=66, message="DELEGATION_TOKEN_EXPIRED",
):
    """Delegation Token is expired."""


class InvalidPrincipalTypeError(BrokerResponseError, errno=67, message="INVALID_PRINCIPAL_TYPE"):
    """Supplied principalType is not supported."""


class NonEmptyGroupError(BrokerResponseError, errno=68, message="NON_EMPTY_GROUP"):
    """The group is not empty."""


class GroupIdNotFoundError(BrokerResponseError, errno=69, message="GROUP_ID_NOT_FOUND"):
    """The group id does not exist."""


class FetchSessionIdNotFoundError(
    BrokerResponseError, errno=70, message="FETCH_SESSION_ID_NOT_FOUND",
    retriable=True,
):
    """The fetch session ID was not found."""


class InvalidFetchSessionEpochError(
    BrokerResponseError, errno=71, message="INVALID_FETCH_SESSION_EPOCH",
    retriable=True,
):
    """The fetch session epoch is invalid."""


class ListenerNotFoundError(
    BrokerResponseError, errno=72, message="LISTENER_NOT_FOUND",
    retriable=True, invalid_metadata=True,
):
    """There is no listener on the leader broker that matches the listener on which metadata
    request was processed.
    """


class TopicDeletionDisabledError(BrokerResponseError, errno=73, message="TOPIC_DELETION_DISABLED"):
    """Topic deletion is disabled."""


class FencedLeaderEpochError(
    BrokerResponseError, errno=74, message="FENCED_LEADER_EPOCH",
    retriable=True, invalid_metadata=True,
):
    """The leader epoch in the request is older than the epoch on the broker."""


class UnknownLeaderEpochError(
    BrokerResponseError, errno=75, message="UNKNOWN_LEADER_EPOCH",
    retriable=True,
):
    """The leader epoch in the request is newer than the epoch on the broker."""


class UnsupportedCompressionTypeError(
    BrokerResponseError, errno=76, message="UNSUPPORTED_COMPRESSION_TYPE",
):
    """The requesting client does not support the compression type of given partition."""


class StaleBrokerEpochError(BrokerResponseError, errno=77, message="STALE_BROKER_EPOCH"):
    """Broker epoch has changed."""


class OffsetNotAvailableError(
    BrokerResponseError, errno=78, message="OFFSET_NOT_AVAILABLE",
    retriable=True,
):
    """The leader high watermark has not caught up from a recent leader election so the offsets
    cannot be guaranteed to be monotonically increasing.
    """


class MemberIdRequiredError(BrokerResponseError, errno=79, message="MEMBER_ID_REQUIRED"):
    """The group member needs to have a valid member id before actually entering a consumer group.
    """


class PreferredLeaderNotAvailableError(
    BrokerResponseError, errno=80, message="PREFERRED_LEADER_NOT_AVAILABLE",
    retriable=True, invalid_metadata=True,
):
    """The preferred leader was not available."""


class GroupMaxSizeReachedError(BrokerResponseError, errno=81, message="GROUP_MAX_SIZE_REACHED"):
    """The consumer group has reached its max size."""


class FencedInstanceIdError(BrokerResponseError, errno=82, message="FENCED_INSTANCE_ID"):
    """The broker rejected this static consumer since another consumer with the same
    group.instance.id has registered with a different member.id.
    """


class EligibleLeadersNotAvailableError(
    BrokerResponseError, errno=83, message="ELIGIBLE_LEADERS_NOT_AVAILABLE",
    retriable=True, invalid_metadata=True,
):
    """Eligible topic partition leaders are not available."""


class ElectionNotNeededError(
    BrokerResponseError, errno=84, message="ELECTION_NOT_NEEDED",
    retriable=True, invalid_metadata=True,
):
    """Leader election not needed for topic partition."""


class NoReassignmentInProgressError(
    BrokerResponseError, errno=85, message="NO_REASSIGNMENT_IN_PROGRESS",
):
    """No partition reassignment is in progress."""


class GroupSubscribedToTopicError(
    BrokerResponseError, errno=86, message="GROUP_SUBSCRIBED_TO_TOPIC",
):
    """Deleting offsets of a topic is forbidden while the consumer group is actively subscribed to
    it.
    """


class InvalidRecordError(BrokerResponseError, errno=87, message="INVALID_RECORD"):
    """This record has failed the validation on broker and hence will be rejected."""


class UnstableOffsetCommitError(
    BrokerResponseError, errno=88, message="UNSTABLE_OFFSET_COMMIT",
    retriable=True,
):
    """There are unstable offsets that need to be cleared."""


class ThrottlingQuotaExceededError(
    BrokerResponseError, errno=89, message="THROTTLING_QUOTA_EXCEEDED",
    retriable=True,
):
    """The throttling quota has been exceeded."""


class ProducerFencedError(BrokerResponseError, errno=90, message="PRODUCER_FENCED"):
    """There is a newer producer with the same transactionalId which fences the current one."""


class ResourceNotFoundError(BrokerResponseError, errno=91, message="RESOURCE_NOT_FOUND"):
    """A request illegally referred to a resource that does not exist."""


class DuplicateResourceError(BrokerResponseError, errno=92, message="DUPLICATE_RESOURCE"):
    """A request illegally referred to the same resource twice."""


class UnacceptableCredentialError(
    BrokerResponseError, errno=93, message="UNACCEPTABLE_CREDENTIAL",
):
    """Requested credential would not meet criteria for acceptability."""


class InconsistentVoterSetError(BrokerResponseError, errno=94, message="INCONSISTENT_VOTER_SET"):
    """Indicates that the either the sender or recipient of a voter-only request is not one of the
    expected voters.
    """


class InvalidUpdateVersionError(BrokerResponseError, errno=95, message="INVALID_UPDATE_VERSION"):
    """The given update version was invalid."""


class FeatureUpdateFailedError(BrokerResponseError, errno=96, message="FEATURE_UPDATE_FAILED"):
    """Unable to update finalized features due to an unexpected server error."""


class PrincipalDeserializationFailureError(
    BrokerResponseError, errno=97, message="PRINCIPAL_DESERIALIZATION_FAILURE",
):
    """Request principal deserialization failed during forwarding. This indicates an internal error
    on the broker cluster security setup.
    """


class SnapshotNotFoundError(BrokerResponseError, errno=98, message="SNAPSHOT_NOT_FOUND"):
    """Requested snapshot was not found. Requested position is not greater than or equal to zero,
    and less than the size of the snapshot.
    """


class UnknownTopicIdError(
    BrokerResponseError, errno=100, message="UNKNOWN_TOPIC_ID",
    retriable=True, invalid_metadata=True,
):
    """This server does not host this topic ID."""


class DuplicateBrokerRegistrationError(
    BrokerResponseError, errno=101, message="DUPLICATE_BROKER_REGISTRATION",
):
    """This broker ID is already in use."""


class BrokerIdNotRegisteredError(
    BrokerResponseError, errno=102, message="BROKER_ID_NOT_REGISTERED",
):
    """The given broker ID was not registered."""


class InconsistentTopicIdError(
    BrokerResponseError, errno=103, message="INCONSISTENT_TOPIC_ID",
    retriable=True, invalid_metadata=True,
):
    """The log's topic ID did not match the topic ID in the request."""


class InconsistentClusterIdError(
    BrokerResponseError, errno=104, message="INCONSISTENT_CLUSTER_ID",
):
    """The clusterId in the request does not match that found on the server."""


class TransactionalIdNotFoundError(
    BrokerResponseError, errno=105, message="TRANSACTIONAL_ID_NOT_FOUND",
):
    """The transactionalId could not be found."""


class FetchSessionTopicIdError(
    BrokerResponseError, errno=106, message="FETCH_SESSION_TOPIC_ID_ERROR",
    retriable=True,
):
    """The fetch session encountered inconsistent topic ID usage."""


class IneligibleReplicaError(BrokerResponseError, errno=107, message="INELIGIBLE_REPLICA"):
    """The new ISR contains at least one ineligible replica."""


class NewLeaderElectedError(BrokerResponseError, errno=108, message="NEW_LEADER_ELECTED"):
    """The AlterPartition request successfully updated the partition state but the leader has
    changed.
    """


class OffsetMovedToTieredStorageError(
    BrokerResponseError, errno=109, message="OFFSET_MOVED_TO_TIERED_STORAGE",
):
    """The requested offset is moved to tiered storage."""


class FencedMemberEpochError(BrokerResponseError, errno=110, message="FENCED_MEMBER_EPOCH"):
    """The member epoch is fenced by the group coordinator. The member must abandon all its
    partitions and rejoin.
    """


class UnreleasedInstanceIdError(BrokerResponseError, errno=111, message="UNRELEASED_INSTANCE_ID"):
    """The instance ID is still used by another member in the consumer group. That member must
    leave first.
    """


class UnsupportedAssignorError(BrokerResponseError, errno=112, message="UNSUPPORTED_ASSIGNOR"):
    """The assignor or its version range is not supported by the consumer group."""


class StaleMemberEpochError(BrokerResponseError, errno=113, message="STALE_MEMBER_EPOCH"):
    """The member epoch is stale. The member must retry after receiving its updated member epoch
    via the ConsumerGroupHeartbeat API.
    """


class MismatchedEndpointTypeError(
    BrokerResponseError, errno=114, message="MISMATCHED_ENDPOINT_TYPE",
):
    """The request was sent to an endpoint of the wrong type."""


class UnsupportedEndpointTypeError(
    BrokerResponseError, errno=115, message="UNSUPPORTED_ENDPOINT_TYPE",
):
    """This endpoint type is not supported yet."""


class UnknownControllerIdError(BrokerResponseError, errno=116, message="UNKNOWN_CONTROLLER_ID"):
    """This controller ID is not known."""


class UnknownSubscriptionIdError(
    BrokerResponseError, errno=117, message="UNKNOWN_SUBSCRIPTION_ID",
):
    """Client sent a push telemetry request with an invalid or outdated subscription ID."""


class TelemetryTooLargeError(BrokerResponseError, errno=118, message="TELEMETRY_TOO_LARGE"):
    """Client sent a push telemetry request larger than the maximum size the broker will accept."""


class InvalidRegistrationError(BrokerResponseError, errno=119, message="INVALID_REGISTRATION"):
    """The controller has considered the broker registration to be invalid."""


class TransactionAbortableError(BrokerResponseError, errno=120, message="TRANSACTION_ABORTABLE"):
    """The server encountered an error with the transaction. The client can abort the transaction
    to continue using this transactional ID.
    """


class InvalidRecordStateError(BrokerResponseError, errno=121, message="INVALID_RECORD_STATE"):
    """The record state is invalid. The acknowledgement of delivery could not be completed."""


class ShareSessionNotFoundError(
    BrokerResponseError, errno=122, message="SHARE_SESSION_NOT_FOUND",
    retriable=True,
):
    """The share session was not found."""


class InvalidShareSessionEpochError(
    BrokerResponseError, errno=123, message="INVALID_SHARE_SESSION_EPOCH",
    retriable=True,
):
    """The share session epoch is invalid."""


class FencedStateEpochError(BrokerResponseError, errno=124, message="FENCED_STATE_EPOCH"):
    """The share coordinator rejected the request because the share-group state epoch did not
    match.
    """


class InvalidVoterKeyError(BrokerResponseError, errno=125, message="INVALID_VOTER_KEY"):
    """The voter key doesn't match the receiving replica's key."""


class DuplicateVoterError(BrokerResponseError, errno=126, message="DUPLICATE_VOTER"):
    """The voter is already part of the set of voters."""


class VoterNotFoundError(BrokerResponseError, errno=127, message="VOTER_NOT_FOUND"):
    """The voter is not part of the set of voters."""


class InvalidRegularExpressionError(
    BrokerResponseError, errno=128, message="INVALID_REGULAR_EXPRESSION",
):
    """The regular expression is not valid."""


# Kafka 0.8 / 0.9-era names of the same codes (ErrorMapping and early Errors.java).
InvalidMessageError = CorruptRecordError
CorruptMessageError = CorruptRecordError
NotLeaderOrFollowerError = NotLeaderForPartitionError
MessageTooLargeError = MessageSizeTooLargeError
StaleLeaderEpochError = NetworkExceptionError
OffsetsLoadInProgressError = CoordinatorLoadInProgressError
GroupLoadInProgressError = CoordinatorLoadInProgressError
ConsumerCoordinatorNotAvailableError = CoordinatorNotAvailableError
GroupCoordinatorNotAvailableError = CoordinatorNotAvailableError
NotCoordinatorForConsumerError = NotCoordinatorError
NotCoordinatorForGroupError = NotCoordinatorError
MessageSetSizeTooLargeError = RecordListTooLargeError
TopicExistsError = TopicAlreadyExistsError


# Static, so type checkers and readers see the names; a test checks it against the registry.
__all__ = [
    "BrokerIdNotRegisteredError", "BrokerNotAvailableError", "ClusterAuthorizationFailedError",
    "ConcurrentTransactionsError", "CoordinatorLoadInProgressError",
    "CoordinatorNotAvailableError", "CorruptRecordError", "DelegationTokenAuthDisabledError",
    "DelegationTokenAuthorizationFailedError", "DelegationTokenExpiredError",
    "DelegationTokenNotFoundError", "DelegationTokenOwnerMismatchError",
    "DelegationTokenRequestNotAllowedError", "DuplicateBrokerRegistrationError",
    "DuplicateResourceError", "DuplicateSequenceNumberError", "DuplicateVoterError",
    "ElectionNotNeededError", "EligibleLeadersNotAvailableError", "FeatureUpdateFailedError",
    "FencedInstanceIdError", "FencedLeaderEpochError", "FencedMemberEpochError",
    "FencedStateEpochError", "FetchSessionIdNotFoundError", "FetchSessionTopicIdError",
    "GroupAuthorizationFailedError", "GroupIdNotFoundError", "GroupMaxSizeReachedError",
    "GroupSubscribedToTopicError", "IllegalGenerationError", "IllegalSaslStateError",
    "InconsistentClusterIdError", "InconsistentGroupProtocolError", "InconsistentTopicIdError",
    "InconsistentVoterSetError", "IneligibleReplicaError", "InvalidCommitOffsetSizeError",
    "InvalidConfigurationError", "InvalidFetchSessionEpochError", "InvalidFetchSizeError",
    "InvalidGroupIdError", "InvalidPartitionsError", "InvalidPrincipalTypeError",
    "InvalidProducerEpochError", "InvalidProducerIdMappingError", "InvalidRecordError",
    "InvalidRecordStateError", "InvalidRegistrationError", "InvalidRegularExpressionError",
    "InvalidReplicaAssignmentError", "InvalidReplicationFactorError", "InvalidRequestError",
    "InvalidRequiredAcksError", "InvalidSessionTimeoutError", "InvalidShareSessionEpochError",
    "InvalidTimestampError", "InvalidTopicError", "InvalidTransactionTimeoutError",
    "InvalidTxnStateError", "InvalidUpdateVersionError", "InvalidVoterKeyError",
    "KafkaStorageError", "LeaderNotAvailableError", "ListenerNotFoundError",
    "LogDirNotFoundError", "MemberIdRequiredError", "MessageSizeTooLargeError",
    "MismatchedEndpointTypeError", "NetworkExceptionError", "NewLeaderElectedError",
    "NoReassignmentInProgressError", "NonEmptyGroupError", "NotControllerError",
    "NotCoordinatorError", "NotEnoughReplicasAfterAppendError", "NotEnoughReplicasError",
    "NotLeaderForPartitionError", "OffsetMetadataTooLargeError",
    "OffsetMovedToTieredStorageError", "OffsetNotAvailableError", "OffsetOutOfRangeError",
    "OperationNotAttemptedError", "OutOfOrderSequenceNumberError", "PolicyViolationError",
    "PreferredLeaderNotAvailableError", "PrincipalDeserializationFailureError",
    "ProducerFencedError", "ReassignmentInProgressError", "RebalanceInProgressError",
    "RecordListTooLargeError", "ReplicaNotAvailableError", "RequestTimedOutError",
    "ResourceNotFoundError", "SaslAuthenticationFailedError", "SecurityDisabledError",
    "ShareSessionNotFoundError", "SnapshotNotFoundError", "StaleBrokerEpochError",
    "StaleControllerEpochError", "StaleMemberEpochError", "TelemetryTooLargeError",
    "ThrottlingQuotaExceededError", "TopicAlreadyExistsError", "TopicAuthorizationFailedError",
    "TopicDeletionDisabledError", "TransactionAbortableError",
    "TransactionCoordinatorFencedError", "TransactionalIdAuthorizationFailedError",
    "TransactionalIdNotFoundError", "UnacceptableCredentialError", "UnknownControllerIdError",
    "UnknownLeaderEpochError", "UnknownMemberIdError", "UnknownProducerIdError",
    "UnknownServerError", "UnknownSubscriptionIdError", "UnknownTopicIdError",
    "UnknownTopicOrPartitionError", "UnreleasedInstanceIdError", "UnstableOffsetCommitError",
    "UnsupportedAssignorError", "UnsupportedCompressionTypeError",
    "UnsupportedEndpointTypeError", "UnsupportedForMessageFormatError",
    "UnsupportedSaslMechanismError", "UnsupportedVersionError", "VoterNotFoundError",
    "InvalidMessageError", "CorruptMessageError", "NotLeaderOrFollowerError",
    "MessageTooLargeError", "StaleLeaderEpochError", "OffsetsLoadInProgressError",
    "GroupLoadInProgressError", "ConsumerCoordinatorNotAvailableError",
    "GroupCoordinatorNotAvailableError", "NotCoordinatorForConsumerError",
    "NotCoordinatorForGroupError", "MessageSetSizeTooLargeError", "TopicExistsError",
]
