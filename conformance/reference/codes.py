"""Kafka error codes the reference members react to, with their names (Kafka's protocol error table).

Shared by the classic member (:mod:`conformance.reference.member`) and the KIP-848 member
(:mod:`conformance.reference.consumer_member`); each module says what it does on which code.
"""

from __future__ import annotations

from kafka.errors import for_code

NONE = 0
OFFSET_OUT_OF_RANGE = 1
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
INVALID_GROUP_ID = 24
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
REBALANCE_IN_PROGRESS = 27
GROUP_AUTHORIZATION_FAILED = 30
MEMBER_ID_REQUIRED = 79
GROUP_MAX_SIZE_REACHED = 81
FENCED_INSTANCE_ID = 82

FENCING = {ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID}
COORDINATOR_MOVED = {COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR}
FATAL_GROUP_ERRORS = {INCONSISTENT_GROUP_PROTOCOL, INVALID_GROUP_ID, INVALID_SESSION_TIMEOUT,
                      GROUP_AUTHORIZATION_FAILED, GROUP_MAX_SIZE_REACHED}


def error_name(code: int) -> str:
    try:
        return f"{for_code(code).__name__}({code})"
    except Exception:  # an unknown code is still reported by number
        return f"error({code})"

# The consumer group protocol (KIP-848).
UNSUPPORTED_VERSION = 35
GROUP_ID_NOT_FOUND = 69
INVALID_REQUEST = 42
FENCED_MEMBER_EPOCH = 110
UNRELEASED_INSTANCE_ID = 111
UNSUPPORTED_ASSIGNOR = 112
STALE_MEMBER_EPOCH = 113
