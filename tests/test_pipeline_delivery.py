"""D1 (every acknowledged record is consumed at least once) against a brute-force oracle.

The check finds the offsets no consumed range covers with one sort of the consumed ranges
(``delivery.uncovered``) and judges every produced range against those gaps. The oracle walks
offsets one by one. Hand-picked shapes (gaps at the head, middle and tail, a partition nobody
consumed, overlapping and adjacent consumed ranges, a produced range over two gaps) and seeded
random histories must give the same violations, message and evidence included.
"""

from __future__ import annotations

import random

import pytest

from conformance.pipeline.checks.delivery import check_d1
from conformance.pipeline.derived import Tables
from conformance.pipeline.session import get_session

pytestmark = pytest.mark.slow

Range = tuple[str, str, int, int, int, float]   # run, topic, partition, first, last, ts


@pytest.fixture(scope="module")
def spark():
    return get_session()


def _judge(spark, produced: list[Range], consumed: list[Range]) -> list[dict]:
    rows = [(r, t, p, f, last, ts, "produced", "producer") for r, t, p, f, last, ts in produced]
    rows += [(r, t, p, f, last, ts, "consumed", "m1") for r, t, p, f, last, ts in consumed]
    events = spark.createDataFrame(rows, "run string, topic string, partition int, first_offset long, "
                                         "last_offset long, ts double, event string, member string")
    t = Tables(*[events] * 10)
    t.events = events
    t.ownership = spark.createDataFrame([], "run string, topic string, partition int, member string, "
                                            "start_ts double, end_ts double")
    t.cells = spark.createDataFrame([(r, True) for r in sorted({r[0] for r in rows})], "run string, complete boolean")
    return sorted(check_d1(t), key=lambda v: (v["run"], v["partitions"]))


def _oracle(produced: list[Range], consumed: list[Range]) -> list[dict]:
    covered: dict[tuple, set[int]] = {}
    for r, t, p, f, last, _ts in consumed:
        covered.setdefault((r, t, p), set()).update(range(f, last + 1))
    per_key: dict[tuple, list] = {}
    for r, t, p, f, last, ts in produced:
        have = covered.get((r, t, p), set())
        pieces: list[list[int]] = []
        for o in range(f, last + 1):
            if o in have:
                continue
            if pieces and pieces[-1][1] == o - 1:
                pieces[-1][1] = o
            else:
                pieces.append([o, o])
        if pieces:
            per_key.setdefault((r, t, p), []).append((f, last, ts, pieces))
    out = []
    for (r, t, p), ranges in sorted(per_key.items()):
        ranges.sort()
        missing = [piece for _f, _l, _ts, pieces in ranges for piece in pieces]
        n = sum(b - a + 1 for a, b in missing)
        shown = ", ".join(f"{a}-{b}" for a, b in missing[:10]) + (" ..." if len(missing) > 10 else "")
        # Nobody owns anything in these histories: no culprit, nobody harmed, no owner change.
        out.append({"run": r, "invariant": "D1", "members": [], "culprit": None, "harmed": [], "allowed_by": None,
                    "generation": None, "partitions": [[t, p]],
                    "ts": ranges[0][2], "evidence": {"missing": missing[:100], "records": n, "owner_changed": False},
                    "message": f"{n} acknowledged record(s) of {t}-{p} never consumed: offsets {shown}; "
                               "culprit unknown: nobody owned it since"})
    return out


def test_hand_picked_shapes(spark):
    produced = [("a", "t", 0, 0, 9, 1.0), ("a", "t", 0, 10, 19, 2.0), ("a", "t", 0, 20, 29, 3.0),
                ("a", "t", 1, 0, 49, 4.0),                        # over two gaps
                ("a", "t", 2, 0, 9, 5.0),                         # nobody consumed t-2
                ("a", "t", 3, 0, 9, 6.0), ("a", "t", 3, 10, 19, 7.0),
                ("b", "t", 0, 5, 14, 8.0)]
    consumed = [("a", "t", 0, 2, 9, 1.5), ("a", "t", 0, 10, 14, 2.5), ("a", "t", 0, 12, 17, 2.6),   # head + tail gaps
                ("a", "t", 1, 0, 9, 4.5), ("a", "t", 1, 20, 29, 4.6), ("a", "t", 1, 40, 49, 4.7),   # two middle gaps
                ("a", "t", 3, 0, 9, 6.5), ("a", "t", 3, 10, 19, 7.5),                              # adjacent: covered
                ("b", "t", 0, 0, 20, 8.5)]                                                         # wider than produced
    got = _judge(spark, produced, consumed)
    assert got == _oracle(produced, consumed)
    assert [(v["run"], v["partitions"], v["evidence"]["missing"]) for v in got] == [
        ("a", [["t", 0]], [[0, 1], [18, 19], [20, 29]]),
        ("a", [["t", 1]], [[10, 19], [30, 39]]),
        ("a", [["t", 2]], [[0, 9]]),
    ]


def test_everything_consumed_passes(spark):
    produced = [("a", "t", p, f, f + 9, float(f)) for p in range(3) for f in range(0, 100, 10)]
    consumed = [("a", "t", p, f, f + 4, float(f)) for p in range(3) for f in range(0, 100, 5)]
    assert _judge(spark, produced, consumed) == []


@pytest.mark.parametrize("seed", range(6))
def test_random_histories_match_the_oracle(spark, seed):
    rng = random.Random(seed)
    produced, consumed = [], []
    for run in ("a", "b"):
        for p in range(3):
            for f in range(0, 60, 6):
                produced.append((run, "t", p, f, f + rng.randint(0, 7), rng.random()))
            for _ in range(rng.randint(0, 12)):
                f = rng.randint(0, 64)
                consumed.append((run, "t", p, f, f + rng.randint(0, 9), rng.random()))
    assert _judge(spark, produced, consumed) == _oracle(produced, consumed)
