"""`conformance decode` through the installed entry point (subprocess)."""

from __future__ import annotations

import json
import struct
import subprocess

import pytest

from conformance.config import REPO_ROOT

CONFORMANCE = REPO_ROOT / ".venv" / "bin" / "conformance"

pytestmark = pytest.mark.skipif(not CONFORMANCE.exists(), reason=f"{CONFORMANCE} missing: run scripts/bootstrap.sh")


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(CONFORMANCE), "decode", *args], capture_output=True, text=True, timeout=60, cwd=REPO_ROOT
    )


def i16(v):
    return struct.pack(">h", v)


def i32(v):
    return struct.pack(">i", v)


def s(t: str) -> bytes:
    return i16(len(t)) + t.encode()


# v3: Topics ["orders"], UserData ff ff ff ff, OwnedPartitions [{orders, [0, 1, 2]}], GenerationId 4, RackId "r1"
SUB_V3 = (i16(3) + i32(1) + s("orders") + i32(4) + b"\xff" * 4 + i32(1) + s("orders") + i32(3)
          + i32(0) + i32(1) + i32(2) + i32(4) + s("r1"))


def test_subscription_v3():
    p = run("subscription", SUB_V3.hex())
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == {
        "version": 3,
        "topics": ["orders"],
        "user_data": "ffffffff",
        "owned_partitions": [{"topic": "orders", "partitions": [0, 1, 2]}],
        "generation_id": 4,
        "rack_id": "r1",
    }
    assert p.stderr == ""


def test_subscription_v0_null_userdata():
    p = run("subscription", (i16(0) + i32(1) + s("t") + i32(-1)).hex())
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert (out["version"], out["topics"], out["user_data"], out["owned_partitions"], out["generation_id"], out["rack_id"]) == (
        0, ["t"], None, [], -1, None)
    assert "trailing" not in out


def test_newer_version_shows_declared_version_and_trailing():
    data = i16(5) + SUB_V3[2:] + b"\xca\xfe"
    p = run("subscription", data.hex())
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["version"] == 5 and out["trailing"] == "cafe" and out["rack_id"] == "r1"


def test_assignment():
    data = i16(1) + i32(1) + s("orders") + i32(2) + i32(0) + i32(2) + i32(0)
    p = run("assignment", data.hex())
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == {
        "version": 1,
        "assigned_partitions": [{"topic": "orders", "partitions": [0, 2]}],
        "user_data": "",
    }


def test_userdata_with_and_without_assignor():
    p = run("userdata", "00000000")
    out = json.loads(p.stdout)
    assert p.returncode == 0 and out["ambiguous"] is True and "sticky-v0" in out["note"]
    p = run("userdata", "--assignor", "cooperative-sticky", "00000000")
    out = json.loads(p.stdout)
    assert (out["format"], out["fields"], out["ambiguous"]) == ("cooperative-generation", {"generation": 0}, False)
    p = run("userdata", "null")
    assert json.loads(p.stdout)["format"] == "null"
    p = run("userdata", "ffffffff")
    assert json.loads(p.stdout) == {"format": "cooperative-generation", "fields": {"generation": -1},
                                    "ambiguous": False, "note": None}


@pytest.mark.parametrize(
    "args,line",
    [
        (("subscription", SUB_V3[:-1].hex()), f"error at byte {len(SUB_V3) - 4}: RackId: string length 2 runs past the end (1 bytes left)"),
        (("subscription", (SUB_V3 + b"\x00").hex()), f"error at byte {len(SUB_V3)}: 1 trailing bytes after the v3 fields"),
        (("subscription", "ffff"), "error at byte 0: Version: negative version -1"),
        (("subscription", ""), "error at byte 0: Version: truncated, needs 2 bytes, 0 left"),
        (("subscription", "00zz"), "error at byte 1: invalid hex digit 'z' at character 2"),
        (("assignment", "000"), "error at byte 1: odd number of hex digits (3)"),
        (("assignment", "0000ffffffff"), "error at byte 2: AssignedPartitions: null array where the field is not nullable"),
        (("userdata", "xyz"), "error at byte 0: invalid hex digit 'x' at character 0"),
    ],
)
def test_malformed_input_one_line_exit_2(args, line):
    p = run(*args)
    assert p.returncode == 2
    assert p.stdout == ""
    assert p.stderr == line + "\n"
    assert "Traceback" not in p.stderr


@pytest.mark.parametrize(
    "typed,line",
    [
        ("00 11 2z 33", "error at byte 2: invalid hex digit 'z' at character 7"),   # where it was typed, spaces counted
        ("0x 0g", "error at byte 0: invalid hex digit 'g' at character 4"),
        (b"00\xff0", "error at byte 1: invalid hex digit (the byte 0xff, not text) at character 2"),
        ("00\x01", "error at byte 1: invalid hex digit U+0001 at character 2"),
    ],
)
def test_bad_hex_digit_is_shown_where_and_as_typed(typed, line):
    p = subprocess.run([str(CONFORMANCE), "decode", "subscription", typed], capture_output=True, timeout=60, cwd=REPO_ROOT)
    assert p.returncode == 2
    assert p.stdout == b""
    assert p.stderr.decode() == line + "\n"
