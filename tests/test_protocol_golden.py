"""Golden vectors made by the real client libraries, checked against our codec (invariant E4's ground truth).

Each fixtures/golden/<library>-<version>.json holds vectors produced by that library's OWN encoder
(see fixtures/golden/README.md; regenerate with scripts/regen-golden.sh). For every vector:

- subscription / assignment: our strict decoder reads exactly the recorded logical content (which the
  library's own decoder read back), and our encoder, given that content, writes the library's bytes
  byte for byte (our encoder keeps the order it is given, so this holds for every well-formed vector).
  ``canonical`` must say truthfully whether the bytes are in canonical order (topics sorted; partition
  lists grouped by sorted topic, partitions ascending): for a canonical vector, encoding the
  canonicalised content reproduces the bytes; for a non-canonical one it does not.
- ``malformed`` vectors (bytes a library writes that declare a version without its fields) must be
  rejected by our strict decoder with a DecodeError.
- userdata: classify_userdata names the recorded format and fields, and our userdata encoders rebuild
  the bytes.

These tests read only the committed fixtures: no Maven, Go or network at test time.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from conformance import config
from conformance.protocol import (
    Assignment,
    DecodeError,
    Subscription,
    TopicPartitions,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from conformance.protocol.userdata import (
    UserDataInfo,
    classify_userdata,
    encode_cooperative_generation,
    encode_sticky_userdata,
    readings,
)

REQUIRED_KEYS = ("id", "library", "library_version", "kind", "assignor", "hex", "content", "canonical", "facts")
KINDS = ("subscription", "assignment", "userdata")


def load_fixture_files(directory: Path = config.GOLDEN_DIR) -> dict[str, list[dict]]:
    """Every fixture file by name; raises with the file named if one is not a JSON list."""
    files: dict[str, list[dict]] = {}
    for path in sorted(directory.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, list):
            raise AssertionError(f"{path}: expected a JSON list of vectors, got {type(data).__name__}")
        files[path.name] = data
    return files


FILES = load_fixture_files()
VECTORS = [v for vs in FILES.values() for v in vs]


# ----------------------------------------------------------------------------- content <-> codec objects


def _tps(items: list[dict]) -> tuple[TopicPartitions, ...]:
    return tuple(TopicPartitions(i["topic"], tuple(i["partitions"])) for i in items)


def _bytes_or_none(h: str | None) -> bytes | None:
    return None if h is None else bytes.fromhex(h)


def subscription_from_content(c: dict) -> Subscription:
    return Subscription(
        version=c["version"],
        topics=tuple(c["topics"]),
        user_data=_bytes_or_none(c["user_data"]),
        owned_partitions=_tps(c["owned_partitions"]),
        generation_id=c["generation_id"],
        rack_id=c["rack_id"],
    )


def assignment_from_content(c: dict) -> Assignment:
    return Assignment(
        version=c["version"],
        assigned_partitions=_tps(c["assigned_partitions"]),
        user_data=_bytes_or_none(c["user_data"]),
    )


def _canonical_tps(tps: tuple[TopicPartitions, ...]) -> tuple[TopicPartitions, ...]:
    merged: dict[str, list[int]] = {}
    for tp in tps:
        merged.setdefault(tp.topic, []).extend(tp.partitions)
    return tuple(TopicPartitions(t, tuple(sorted(merged[t]))) for t in sorted(merged))


def canonicalise(obj: Subscription | Assignment) -> Subscription | Assignment:
    """The canonical (Java 2.8+ subscription) order of the same logical content."""
    if isinstance(obj, Subscription):
        return dataclasses.replace(
            obj, topics=tuple(sorted(obj.topics)), owned_partitions=_canonical_tps(obj.owned_partitions)
        )
    return dataclasses.replace(obj, assigned_partitions=_canonical_tps(obj.assigned_partitions))


# ----------------------------------------------------------------------------- the check


def check_vector(vec: dict) -> list[str]:
    """Every way ``vec`` disagrees with our codec or with its own claims; empty when it is clean."""
    missing = [k for k in REQUIRED_KEYS if k not in vec]
    if missing:
        return [f"missing keys {missing}"]
    if vec["kind"] not in KINDS:
        return [f"kind {vec['kind']!r} is not one of {KINDS}"]
    if not isinstance(vec["facts"], list) or not all(isinstance(f, str) for f in vec["facts"]):
        return ["facts must be a list of strings"]
    if not vec["id"].startswith(f"{vec['library']}-{vec['library_version']}-"):
        return [f"id {vec['id']!r} does not start with '{vec['library']}-{vec['library_version']}-'"]
    if vec["kind"] == "userdata":
        return _check_userdata(vec)
    return _check_embedded(vec)


def _check_embedded(vec: dict) -> list[str]:
    problems: list[str] = []
    raw = bytes.fromhex(vec["hex"])
    subscription = vec["kind"] == "subscription"
    decode = decode_subscription if subscription else decode_assignment
    encode = encode_subscription if subscription else encode_assignment
    expected = (subscription_from_content if subscription else assignment_from_content)(vec["content"])
    if vec.get("malformed"):
        try:
            got = decode(raw)
        except DecodeError:
            return []
        return [f"marked malformed, but our strict decoder accepted it as {got}"]
    try:
        decoded = decode(raw)
    except DecodeError as e:
        return [f"our decoder rejects the library's bytes: {e}"]
    if decoded != expected:
        problems.append(f"decoded {decoded} != recorded content {expected}")
    again = encode(expected)
    if again != raw:
        problems.append(f"re-encoding the content gives {again.hex()}, the library wrote {raw.hex()}")
    canon = canonicalise(expected)
    is_canonical = canon == expected and encode(canon) == raw
    if vec["canonical"] != is_canonical:
        problems.append(
            f"canonical is {vec['canonical']} but the bytes are {'' if is_canonical else 'not '}in canonical "
            f"order (canonical form encodes to {encode(canon).hex()})"
        )
    return problems


def _check_userdata(vec: dict) -> list[str]:
    problems: list[str] = []
    raw = _bytes_or_none(vec["hex"])
    content = vec["content"]
    info = classify_userdata(raw, vec["assignor"])
    if info.format != content["format"]:
        found = readings(raw) if raw else {}
        if len(found) > 1 and content["format"] in found:
            # Bytes of several formats (only 00000000): the classifier prefers what the assignor's
            # other writers write (documented); the library's own reading must be among them.
            info = UserDataInfo(content["format"], found[content["format"]])
        else:
            problems.append(f"classified as {info.format} ({info.note}), recorded as {content['format']}")
            return problems
    if info.fields != content["fields"]:
        problems.append(f"classified fields {info.fields} != recorded {content['fields']}")
    fields = content["fields"]
    rebuilt: bytes | None
    if info.format == "null":
        rebuilt = None
    elif info.format == "empty":
        rebuilt = b""
    elif info.format == "cooperative-generation":
        rebuilt = encode_cooperative_generation(fields["generation"])
    elif info.format in ("sticky-v0", "sticky-v1"):
        previous = _tps(fields["previous_assignment"])
        rebuilt = encode_sticky_userdata(previous, fields.get("generation"))
        canonical = previous == _canonical_tps(previous)
        if vec["canonical"] != canonical:
            problems.append(f"canonical is {vec['canonical']} but the previous assignment {previous} is "
                            f"{'' if canonical else 'not '}in canonical order")
    elif info.format == "unknown":
        rebuilt = bytes.fromhex(fields["hex"])  # nothing to re-encode: the classifier kept the bytes
    else:
        return problems + [f"format {info.format} has no encoder to compare against"]
    if rebuilt != raw:
        problems.append(f"our userdata encoder gives {rebuilt!r}, the library wrote {raw!r}")
    return problems


# ----------------------------------------------------------------------------- tests over the fixtures


@pytest.mark.parametrize("vec", VECTORS, ids=[v.get("id", "?") for v in VECTORS])
def test_library_vector_matches_our_codec(vec: dict) -> None:
    assert check_vector(vec) == []


def test_fixture_files_are_named_for_their_library_and_version() -> None:
    for name, vectors in FILES.items():
        assert vectors, f"{name} holds no vectors"
        for v in vectors:
            assert name == f"{v['library']}-{v['library_version']}.json", (name, v["id"])


def test_vector_ids_are_unique() -> None:
    ids = [v["id"] for v in VECTORS]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})


def test_at_least_three_libraries_across_several_versions() -> None:
    versions: dict[str, set[str]] = {}
    for v in VECTORS:
        versions.setdefault(v["library"], set()).add(v["library_version"])
    assert len(versions) >= 3, f"golden vectors cover only {sorted(versions)}"
    thin = {lib: sorted(vs) for lib, vs in versions.items() if len(vs) < 2}
    assert not thin, f"libraries with vectors from a single version only: {thin}"


def test_each_library_version_has_every_kind() -> None:
    for name, vectors in FILES.items():
        kinds = {v["kind"] for v in vectors}
        assert {"subscription", "assignment"} <= kinds, f"{name} lacks {({'subscription', 'assignment'} - kinds)}"


def test_java_writes_the_documented_highest_subscription_version() -> None:
    """Java: v1 at 2.4/2.8, v3 from 3.4 (the library's default serialisation)."""
    expected = {"2.4.1": 1, "2.8.2": 1, "3.4.1": 3, "3.5.2": 3, "3.9.2": 3, "4.4.0": 3}
    got = {
        v["library_version"]: v["content"]["version"]
        for v in VECTORS
        if v["library"] == "java" and v["id"].endswith("-subscription-basic-default")
    }
    assert got == {k: expected[k] for k in got} and got, got


def test_franz_go_writes_the_documented_subscription_versions_and_sticky_userdata() -> None:
    """franz-go: 1.7.0 writes v1 for cooperative-sticky and v0 for the eager balancers; 1.20.2 and
    1.22.3 write v3 for all. Its sticky userData is sticky-v1 once it has a generation, sticky-v0
    (00000000) before (kmsg writes no generation -1)."""
    got = {(v["library_version"], v["id"].split("-subscription-")[1]): v["content"]["version"]
           for v in VECTORS if v["library"] == "franz-go" and v["kind"] == "subscription"}
    for balancer in ("cooperative-sticky", "sticky", "range", "roundrobin"):
        for state in ("fresh", "gen5"):
            assert got[("1.7.0", f"{balancer}-{state}")] == (1 if balancer == "cooperative-sticky" else 0)
            assert got[("1.20.2", f"{balancer}-{state}")] == got[("1.22.3", f"{balancer}-{state}")] == 3
    userdata = {v["id"]: (v["hex"], v["content"]["format"]) for v in VECTORS
                if v["library"] == "franz-go" and v["kind"] == "userdata"}
    assert userdata["franz-go-1.22.3-userdata-cooperative-sticky-fresh"] == ("00000000", "sticky-v0")
    assert userdata["franz-go-1.22.3-userdata-cooperative-sticky-gen5"][1] == "sticky-v1"


# ----------------------------------------------------------------------------- the check catches violations

CLEAN_SUB = {
    "id": "x-1-sub", "library": "x", "library_version": "1", "kind": "subscription", "assignor": None,
    "hex": "0001000000020005617564697400066f72646572730000000000000000",
    "content": {"version": 1, "topics": ["audit", "orders"], "owned_partitions": [], "generation_id": -1,
                "rack_id": None, "user_data": ""},
    "canonical": True, "facts": [],
}


def _with(base: dict, **changes) -> dict:
    out = json.loads(json.dumps(base))
    out.update(changes)
    return out


def test_check_passes_a_clean_vector() -> None:
    assert check_vector(CLEAN_SUB) == []


def test_check_catches_content_that_differs_from_the_bytes() -> None:
    bad = _with(CLEAN_SUB, content={**CLEAN_SUB["content"], "user_data": None})
    assert any("decoded" in p for p in check_vector(bad))


def test_check_catches_bytes_our_decoder_rejects() -> None:
    bad = _with(CLEAN_SUB, hex=CLEAN_SUB["hex"][:-8])
    assert any("rejects" in p for p in check_vector(bad))


def test_check_catches_a_false_canonical_flag() -> None:
    assert any("canonical" in p for p in check_vector(_with(CLEAN_SUB, canonical=False)))
    topics_swapped = _with(
        CLEAN_SUB,
        hex="0001000000020006" + b"orders".hex() + "0005" + b"audit".hex() + "0000000000000000",
        content={**CLEAN_SUB["content"], "topics": ["orders", "audit"]},
    )
    assert any("canonical" in p for p in check_vector(topics_swapped))
    assert check_vector(_with(topics_swapped, canonical=False)) == []


def test_check_catches_a_malformed_mark_our_decoder_disagrees_with() -> None:
    assert any("malformed" in p for p in check_vector(_with(CLEAN_SUB, malformed=True)))
    truncated_v1 = _with(CLEAN_SUB, hex="0001000000020005617564697400066f7264657273ffffffff", malformed=True)
    assert check_vector(truncated_v1) == []


def test_check_catches_a_wrong_userdata_format() -> None:
    clean = {"id": "x-1-ud", "library": "x", "library_version": "1", "kind": "userdata",
             "assignor": "cooperative-sticky", "hex": "00000005",
             "content": {"format": "cooperative-generation", "fields": {"generation": 5}},
             "canonical": True, "facts": []}
    assert check_vector(clean) == []
    assert any("classified" in p for p in check_vector(_with(clean, content={"format": "sticky-v0", "fields": {}})))
    assert any("fields" in p for p in check_vector(
        _with(clean, content={"format": "cooperative-generation", "fields": {"generation": 6}})))


def test_an_ambiguous_blob_passes_as_any_format_it_reads_as_and_no_other() -> None:
    """00000000 is a bare generation 0 and an empty sticky-v0 assignment (what a new franz-go member
    writes under cooperative-sticky): a vector may record either; sticky-v1 it is not."""
    base = {"id": "x-1-ud", "library": "x", "library_version": "1", "kind": "userdata",
            "assignor": "cooperative-sticky", "hex": "00000000", "canonical": True, "facts": []}
    assert check_vector(_with(base, content={"format": "sticky-v0", "fields": {"previous_assignment": []}})) == []
    assert check_vector(_with(base, content={"format": "cooperative-generation", "fields": {"generation": 0}})) == []
    assert any("classified" in p for p in check_vector(
        _with(base, content={"format": "sticky-v1", "fields": {"previous_assignment": [], "generation": 0}})))
    assert any("fields" in p for p in check_vector(
        _with(base, content={"format": "sticky-v0", "fields": {"previous_assignment": [{"topic": "t", "partitions": [0]}]}})))


def test_check_catches_a_malformed_vector_shape() -> None:
    assert check_vector({"id": "x"}) != []
    assert check_vector(_with(CLEAN_SUB, kind="metadata")) != []
    assert check_vector(_with(CLEAN_SUB, id="y-1-sub")) != []
