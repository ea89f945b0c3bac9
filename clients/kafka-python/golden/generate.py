"""Write golden consumer-protocol vectors produced by the installed kafka-python's OWN encoders.

Run with the interpreter of a venv that has exactly one kafka-python release installed
(scripts/regen-golden.sh uses VENVS_DIR/golden-kafka-python-<version>); prints a JSON list of
vectors (schema: fixtures/golden/README.md). Deliberately imports nothing from this repository,
so it runs in any venv.

- kafka-python 2.x: ``kafka.coordinator.protocol`` (ConsumerProtocolMemberMetadata_v0 /
  ConsumerProtocolMemberAssignment_v0 Structs, v0 only) and the StickyPartitionAssignor's
  ``StickyAssignorUserDataV1`` user data.
- kafka-python 3.x: ``kafka.protocol.consumer.metadata`` (ConsumerProtocolSubscription /
  ConsumerProtocolAssignment, generated from Kafka's JSON schemas, v0-v3), the
  CooperativeStickyAssignor's subscription metadata and the StickyPartitionAssignor's user data.

Recorded content is what the library's own decoder reads back from its bytes.
"""

from __future__ import annotations

import json
import sys

import kafka
from kafka.structs import TopicPartition

VERSION = kafka.__version__
TOPICS = ["orders", "audit"]
OWNED = [TopicPartition("orders", 2), TopicPartition("orders", 0), TopicPartition("audit", 1)]
GENERATION = 5
out: list[dict] = []


def emit(vid: str, kind: str, raw: bytes | None, content: dict, canonical: bool, facts: list[str],
         assignor: str | None = None) -> None:
    out.append({
        "id": f"kafka-python-{VERSION}-{vid}", "library": "kafka-python", "library_version": VERSION,
        "kind": kind, "assignor": assignor, "hex": None if raw is None else raw.hex(),
        "content": content, "canonical": canonical, "facts": facts,
    })


def enc(obj) -> bytes:
    """obj.encode(), keeping obj referenced (kafka-python 2.x binds encode through a weak reference)."""
    return bytes(obj.encode())


def _hex(b) -> str | None:
    return None if b is None else bytes(b).hex()


def _canonical(tps: list[dict]) -> bool:
    names = [t["topic"] for t in tps]
    return names == sorted(names) and all(t["partitions"] == sorted(t["partitions"]) for t in tps)


def _order_facts(topics: list[str], given: list[str]) -> list[str]:
    if given == sorted(given):
        return []
    if topics == given:
        return [f"topics written in the order given {given}, not sorted"]
    return [f"topics reordered on write: given {given}, wrote {topics}"]


def _userdata_fact(user_data) -> list[str]:
    if user_data is None:
        return ["userData null (length -1)"]
    if len(user_data) == 0:
        return ["userData empty (length 0), not null"]
    return []


def subscription_vector(vid: str, raw: bytes, decoded, given_topics: list[str], description: str,
                        extra_facts: list[str] = ()) -> None:
    version = decoded.version
    owned = [{"topic": o.topic, "partitions": list(o.partitions)}
             for o in (getattr(decoded, "owned_partitions", None) or [])] if version >= 1 else []
    content = {
        "version": version, "topics": list(decoded.topics), "owned_partitions": owned,
        "generation_id": getattr(decoded, "generation_id", -1) if version >= 2 else -1,
        "rack_id": getattr(decoded, "rack_id", None) if version >= 3 else None,
        "user_data": _hex(decoded.user_data),
    }
    facts = [f"description: {description}", *extra_facts, *_order_facts(content["topics"], given_topics),
             *_userdata_fact(decoded.user_data)]
    canonical = content["topics"] == sorted(content["topics"]) and _canonical(owned)
    emit(vid, "subscription", raw, content, canonical, facts)


def assignment_vector(vid: str, raw: bytes, decoded, description: str, extra_facts: list[str] = ()) -> None:
    pairs = getattr(decoded, "assigned_partitions", None)
    if pairs is None:
        pairs = decoded.assignment
    assigned = []
    for item in pairs:
        topic, partitions = (item.topic, item.partitions) if hasattr(item, "topic") else item
        assigned.append({"topic": topic, "partitions": list(partitions)})
    content = {"version": decoded.version, "assigned_partitions": assigned, "user_data": _hex(decoded.user_data)}
    facts = [f"description: {description}", *extra_facts, *_userdata_fact(decoded.user_data)]
    if not _canonical(assigned):
        facts.append("assigned partitions written in the order given, not sorted")
    emit(vid, "assignment", raw, content, _canonical(assigned), facts)


def sticky_userdata_vector(raw: bytes, description: str, facts: list[str]) -> None:
    """Record the sticky assignor's user data; the content is read from the bytes by hand (no lib decoder)."""
    pos = 0
    prefixed = len(raw) >= 2 and raw[:2] == b"\x00\x01" and _parses_as_sticky(raw[2:])
    body = raw[2:] if prefixed else raw
    if prefixed:
        facts = [*facts, "WRITES AN INT16 VERSION PREFIX (00 01) before the StickyAssignorUserData v1 body: "
                         "Java's StickyAssignor and Sarama write no prefix, so they cannot parse it"]
        emit("userdata-sticky-gen5", "userdata", raw, {"format": "unknown", "fields": {"hex": raw.hex()}}, True,
             [f"description: {description}", *facts], assignor="sticky")
        return
    prev, pos = _read_previous(body)
    fields: dict = {"previous_assignment": prev}
    fmt = "sticky-v0"
    if len(body) - pos == 4:
        fields["generation"] = int.from_bytes(body[pos:], "big", signed=True)
        fmt = "sticky-v1"
    emit("userdata-sticky-gen5", "userdata", raw, {"format": fmt, "fields": fields}, _canonical(prev),
         [f"description: {description}", *facts], assignor="sticky")


def _read_previous(b: bytes) -> tuple[list[dict], int]:
    n = int.from_bytes(b[0:4], "big")
    pos, prev = 4, []
    for _ in range(n):
        ln = int.from_bytes(b[pos:pos + 2], "big")
        topic = b[pos + 2:pos + 2 + ln].decode()
        pos += 2 + ln
        m = int.from_bytes(b[pos:pos + 4], "big")
        pos += 4
        parts = [int.from_bytes(b[pos + 4 * i:pos + 4 * i + 4], "big", signed=True) for i in range(m)]
        pos += 4 * m
        prev.append({"topic": topic, "partitions": parts})
    return prev, pos


def _parses_as_sticky(b: bytes) -> bool:
    try:
        _, pos = _read_previous(b)
    except Exception:
        return False
    return len(b) - pos in (0, 4)


# ----------------------------------------------------------------------------- kafka-python 2.x


def generate_v2() -> None:
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
    from kafka.coordinator.protocol import ConsumerProtocolMemberAssignment_v0 as A
    from kafka.coordinator.protocol import ConsumerProtocolMemberMetadata_v0 as M

    note = ("the coordinator passes the subscription as a Python set, so the real topic order depends on "
            "string hashing (PYTHONHASHSEED); here the assignor is given a list to make the order reproducible")
    meta = RangePartitionAssignor.metadata(TOPICS)
    raw = meta.encode()
    subscription_vector("subscription-range-v0", raw, M.decode(raw), TOPICS,
                        "RangePartitionAssignor.metadata(['orders', 'audit']): the only version 2.x writes is v0",
                        [note])
    raw = enc(M(0, ["audit", "orders"], None))
    subscription_vector("subscription-null-userdata-v0", raw, M.decode(raw), ["audit", "orders"],
                        "ConsumerProtocolMemberMetadata_v0(0, ['audit', 'orders'], None)")

    StickyPartitionAssignor.member_assignment = OWNED
    StickyPartitionAssignor.generation = GENERATION
    meta = StickyPartitionAssignor.metadata(TOPICS)
    raw = meta.encode()
    subscription_vector("subscription-sticky-v0", raw, M.decode(raw), TOPICS,
                        "StickyPartitionAssignor.metadata after an assignment [orders-2, orders-0, audit-1] in "
                        "generation 5", [note])
    sticky_userdata_vector(bytes(M.decode(raw).user_data),
                           "StickyPartitionAssignor user data after [orders-2, orders-0, audit-1], generation 5",
                           ["StickyAssignorUserDataV1 layout (previous assignment, generation), no version prefix",
                            "partitions within a topic in assignment order, not sorted"])

    raw = enc(A(0, [("orders", [1, 0]), ("audit", [0])], b""))
    assignment_vector("assignment-v0", raw, A.decode(raw), "ConsumerProtocolMemberAssignment_v0 as given")
    raw = enc(A(0, [("audit", [0]), ("orders", [0, 1])], b""))
    assignment_vector("assignment-sorted-v0", raw, A.decode(raw), "inputs already sorted")


# ----------------------------------------------------------------------------- kafka-python 3.x


def generate_v3() -> None:
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment as A
    from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription as S

    TP = S.TopicPartition
    owned = [TP(topic="orders", partitions=[2, 0]), TP(topic="audit", partitions=[1])]
    for v in range(S.max_version + 1):
        sub = S(v, topics=TOPICS, user_data=b"\x00\x00\x00\x05", owned_partitions=owned,
                generation_id=GENERATION, rack_id="r1")
        raw = sub.encode()
        subscription_vector(f"subscription-full-v{v}", raw, S.decode(raw), TOPICS,
                            f"ConsumerProtocolSubscription version {v}: owned [orders:[2,0], audit:[1]], "
                            "UserData 00000005, generation 5, rack r1 (fields the version lacks are not written)")

    assignor = CooperativeStickyAssignor()
    assignor.on_assignment(A(1, [("orders", [2, 0]), ("audit", [1])], b""), GENERATION)
    raw = enc(assignor.metadata(set(TOPICS)))
    subscription_vector("subscription-cooperative-consumer", raw, S.decode(raw), TOPICS,
                        "CooperativeStickyAssignor.metadata after on_assignment([orders:[2,0], audit:[1]], 5): "
                        "what the 3.x consumer sends",
                        ["cooperative-sticky writes EMPTY userData: no generation (Java and Sarama 1.60+ write "
                         "the int32 generation)", "writes v1: no GenerationId field, so the generation is not sent",
                         "topics sorted; owned topics in assignment order, partitions sorted"])
    fresh = CooperativeStickyAssignor().metadata(set(TOPICS))
    raw = fresh.encode()
    subscription_vector("subscription-cooperative-fresh", raw, S.decode(raw), TOPICS,
                        "CooperativeStickyAssignor.metadata before any assignment")

    sticky = StickyPartitionAssignor()
    sticky.on_assignment(A(0, [("orders", [2, 0]), ("audit", [1])], b""), GENERATION)
    meta = sticky.metadata(TOPICS)
    raw = meta.encode()
    decoded = S.decode(raw)
    subscription_vector("subscription-sticky-v0", raw, decoded, TOPICS,
                        "StickyPartitionAssignor.metadata after an assignment [orders:[2,0], audit:[1]] in "
                        "generation 5")
    sticky_userdata_vector(bytes(decoded.user_data),
                           "StickyPartitionAssignor user data after [orders:[2,0], audit:[1]], generation 5",
                           ["partitions within a topic in assignment order, not sorted"])

    for v in range(A.max_version + 1):
        raw = enc(A(v, [("orders", [1, 0]), ("audit", [0])], b""))
        assignment_vector(f"assignment-v{v}", raw, A.decode(raw), f"ConsumerProtocolAssignment version {v} as given")
    raw = enc(A(1, [("audit", [0]), ("orders", [0, 1])], b""))
    assignment_vector("assignment-cooperative-leader", raw, A.decode(raw),
                      "what the cooperative-sticky leader builds: version 1, sorted (topic, sorted partitions), "
                      "empty userData")
    raw = enc(A(1, [("audit", [0]), ("orders", [0, 1])], None))
    assignment_vector("assignment-null-userdata-v1", raw, A.decode(raw), "user_data None")


def main() -> int:
    major = int(VERSION.split(".")[0])
    generate_v2() if major < 3 else generate_v3()
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
