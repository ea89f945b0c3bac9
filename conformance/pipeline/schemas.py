"""Spark schemas of the staged inputs and of the typed tables (one place)."""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

TP = StructType([StructField("topic", StringType()), StructField("partition", IntegerType())])
TPS = ArrayType(TP)


def _s(*fields: tuple[str, DataType]) -> StructType:
    return StructType([StructField(name, typ) for name, typ in fields])


#: One history line as parsed from JSON (contract: conformance/history.py).
HISTORY_JSON = _s(
    ("ts", DoubleType()), ("member", StringType()), ("client", StringType()), ("client_version", StringType()),
    ("event", StringType()), ("member_id", StringType()), ("generation", LongType()), ("protocol", StringType()),
    ("reason", StringType()), ("partitions", ArrayType(ArrayType(StringType()))), ("topic", StringType()),
    ("partition", LongType()), ("first_offset", LongType()), ("last_offset", LongType()), ("count", LongType()),
    ("offsets", ArrayType(ArrayType(StringType()))), ("error", StringType()), ("fatal", BooleanType()),
    ("poll_ts", DoubleType()), ("seq", LongType()), ("op", StringType()),
)

FILES = _s(("uri", StringType()), ("run", StringType()), ("file", StringType()))

CELLS = _s(
    ("run", StringType()), ("scenario", StringType()), ("broker_version", StringType()), ("group_id", StringType()),
    ("seed", LongType()), ("expected_protocol", StringType()), ("session_timeout_ms", DoubleType()),
    ("heartbeat_interval_ms", DoubleType()), ("max_poll_interval_ms", DoubleType()),
    ("convergence_bound_ms", DoubleType()), ("revoke_bound_ms", DoubleType()), ("start_ts", DoubleType()),
    ("last_fault_ts", DoubleType()), ("end_ts", DoubleType()), ("leader_rotation", BooleanType()),
    ("complete", BooleanType()), ("cut_short", StringType()),
    ("await_timeouts", ArrayType(_s(("ts", DoubleType()), ("await", StringType()), ("timeout_ms", DoubleType()),
                                    ("phase", StringType()), ("state", StringType())))),
    # Member processes that ended on their own (the runner's exit notes): code < 0 is a signal.
    ("exits", ArrayType(_s(("member", StringType()), ("ts", DoubleType()), ("code", LongType())))),
    # The broker's group.consumer.migration.policy (KIP-848), null when the manifest does not say.
    ("migration_policy", StringType()),
)
MEMBERS = _s(("run", StringType()), ("member", StringType()), ("spec", StringType()), ("kind", StringType()),
             ("version", StringType()), ("strategies", ArrayType(StringType())), ("group_instance_id", StringType()),
             ("faults", ArrayType(StringType())),
             # Its fetch long-poll wait (manifest; the kind registry's for a manifest without it).
             ("fetch_max_wait_ms", DoubleType()),
             # The kind rebalances by the protocol of the assignor the group chose (not Java's rule).
             ("protocol_of_chosen", BooleanType()))
TOPICS = _s(("run", StringType()), ("topic", StringType()), ("partitions", IntegerType()))
NEMESIS = _s(("run", StringType()), ("line", LongType()), ("ts", DoubleType()), ("fault", StringType()),
             ("target", StringType()), ("phase", StringType()), ("details", StringType()))
FRAMES = _s(
    ("run", StringType()), ("line", LongType()), ("ts", DoubleType()), ("member", StringType()), ("api", StringType()),
    ("api_key", IntegerType()), ("version", IntegerType()), ("correlation_id", LongType()), ("direction", StringType()),
    ("group_id", StringType()), ("member_id", StringType()), ("group_instance_id", StringType()),
    ("generation", LongType()), ("protocol_type", StringType()), ("error_code", IntegerType()),
    ("leader", StringType()), ("protocol_name", StringType()), ("member_epoch", LongType()),
    ("n_members", IntegerType()), ("undecodable", StringType()),
)
SUBSCRIPTIONS = _s(
    ("run", StringType()), ("line", LongType()), ("ts", DoubleType()), ("member", StringType()), ("source", StringType()),
    ("subject_member_id", StringType()), ("generation", LongType()), ("protocol_name", StringType()),
    ("protocol_index", IntegerType()), ("group_instance_id", StringType()), ("metadata_hex", StringType()),
    ("decode_error", StringType()), ("version", IntegerType()), ("topics", ArrayType(StringType())), ("owned", TPS),
    ("sub_generation", LongType()), ("rack_id", StringType()), ("userdata_hex", StringType()),
    ("trailing_len", IntegerType()), ("userdata_format", StringType()), ("userdata_note", StringType()),
    ("userdata_ambiguous", BooleanType()), ("canonical_equal", BooleanType()), ("canonical_error", StringType()),
    ("userdata_previous", TPS),
)
ASSIGNMENTS = _s(
    ("run", StringType()), ("line", LongType()), ("ts", DoubleType()), ("member", StringType()), ("source", StringType()),
    ("subject_member_id", StringType()), ("generation", LongType()), ("protocol_name", StringType()),
    ("error_code", IntegerType()), ("assignment_hex", StringType()), ("empty", BooleanType()),
    ("decode_error", StringType()), ("version", IntegerType()), ("partitions", TPS), ("userdata_hex", StringType()),
    ("userdata_format", StringType()), ("userdata_note", StringType()), ("userdata_ambiguous", BooleanType()),
    ("userdata_previous", TPS),
)
COMMITS = _s(
    ("run", StringType()), ("line", LongType()), ("ts", DoubleType()), ("member", StringType()),
    ("member_id", StringType()), ("generation", LongType()), ("topic", StringType()), ("partition", IntegerType()),
    ("offset", LongType()), ("leader_epoch", IntegerType()), ("error_code", IntegerType()), ("response_ts", DoubleType()),
)
#: OffsetForLeaderEpoch answers, one row per partition (:mod:`conformance.pipeline.wire`): ``member`` was told
#: that ``leader_epoch`` of the partition ended at ``end_offset`` (KIP-320).
EPOCH_ENDS = _s(
    ("run", StringType()), ("line", LongType()), ("ts", DoubleType()), ("member", StringType()), ("topic", StringType()),
    ("partition", IntegerType()), ("leader_epoch", IntegerType()), ("end_offset", LongType()),
    ("error_code", IntegerType()),
)
#: ConsumerGroupHeartbeat frames (KIP-848), one row each (:mod:`conformance.pipeline.wire`).
HEARTBEATS = _s(
    ("run", StringType()), ("line", LongType()), ("ts", DoubleType()), ("member", StringType()),
    ("direction", StringType()), ("member_id", StringType()), ("group_instance_id", StringType()),
    ("member_epoch", LongType()), ("error_code", IntegerType()), ("owned", TPS), ("subscribed", ArrayType(StringType())),
    ("assigned", TPS), ("request_epoch", LongType()), ("request_line", LongType()), ("request_ts", DoubleType()),
    ("error_message", StringType()),
)
MALFORMED = _s(("run", StringType()), ("file", StringType()), ("line", LongType()), ("problem", StringType()))
