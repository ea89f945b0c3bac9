"""Tables.shared: pieces several checks need are built once per Tables, nested pieces do not deadlock,
pinned in memory (one partition) only when asked, heavy ones persisted otherwise, and released."""

from __future__ import annotations

import threading

import pytest

from conformance.pipeline.derived import Tables, is_pinned
from conformance.pipeline.session import get_session


@pytest.fixture(scope="module")
def spark():
    return get_session()


def _tables(spark) -> Tables:
    df = spark.range(3)
    return Tables(*[df] * 10)


def test_built_once_and_nested_pieces(spark):
    t = _tables(spark)
    builds: list[str] = []

    def inner():
        builds.append("inner")
        return spark.range(5)

    def outer():   # a piece built on another piece (the lock is re-entrant)
        builds.append("outer")
        return t.shared("inner", inner).where("id > 1")

    first = t.shared("outer", outer)
    again = t.shared("outer", outer)
    assert first is again
    assert t.shared("inner", inner) is t.shared("inner", inner)
    assert builds == ["outer", "inner"]
    assert sorted(r["id"] for r in first.collect()) == [2, 3, 4]
    assert not is_pinned(first) and not first.is_cached   # pin_shared off: nothing is kept


def test_threads_share_one_pinned_build_and_release_forgets(spark):
    t = _tables(spark)
    t.pin_shared = True
    builds: list[int] = []
    got: list = []

    def build():
        builds.append(1)
        return spark.range(4)

    threads = [threading.Thread(target=lambda: got.append(t.shared("p", build))) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=60)
    assert len(builds) == 1 and len(got) == 4 and all(g is got[0] for g in got)
    assert is_pinned(got[0]) and got[0].count() == 4 and got[0].rdd.getNumPartitions() == 1
    t.release_shared()
    t.shared("p", build)
    assert len(builds) == 2   # forgotten after release


def test_heavy_pieces_are_persisted_unpinned_and_dropped_on_release(spark):
    t = _tables(spark)
    heavy = t.shared("heavy", lambda: spark.range(6), heavy=True)
    light = t.shared("light", lambda: spark.range(6))
    assert heavy.is_cached and not is_pinned(heavy)      # computed once, read by every query
    assert not light.is_cached
    assert heavy.count() == 6
    t.release_shared()
    assert not heavy.is_cached                          # dropped, not left in the cache manager
    t.pin_shared = True                                 # small batches pin instead
    pinned = t.shared("heavy", lambda: spark.range(6), heavy=True)
    assert is_pinned(pinned) and not pinned.is_cached
    t.release_shared()
