"""The embedded consumer protocol: strict codec of the bytes inside JoinGroup/SyncGroup.

Public API (other parts import exactly these names)::

    from conformance.protocol import (TopicPartitions, Subscription, Assignment, DecodeError,
        encode_subscription, decode_subscription, encode_assignment, decode_assignment)

Assignor user data lives in :mod:`conformance.protocol.userdata`; the
``conformance decode`` command in :mod:`conformance.protocol.command`.
"""

from conformance.protocol.consumer_protocol import (
    LATEST_VERSION,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from conformance.protocol.model import Assignment, Subscription, TopicPartitions
from conformance.protocol.wire import DecodeError

__all__ = [
    "LATEST_VERSION",
    "Assignment",
    "DecodeError",
    "Subscription",
    "TopicPartitions",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
]
