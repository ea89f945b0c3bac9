"""CollectBatcher: batched collects give exactly what ``df.collect()`` gives (real Spark)."""

from __future__ import annotations

import math

import pytest

from conformance.pipeline.batch import CollectBatcher, _portable
from conformance.pipeline.session import get_session


@pytest.fixture(scope="module")
def spark():
    return get_session()


def _typed(spark):
    return spark.sql("""
        SELECT * FROM VALUES
          (1, CAST(10000000000 AS BIGINT), 1763473600000.123, 'a', true,
           array(named_struct('topic', 't', 'partition', 0)), map('k', 1.5), CAST(NULL AS STRING)),
          (2, CAST(-1 AS BIGINT), CAST('NaN' AS DOUBLE), NULL, false,
           array(), map(), 'x'),
          (3, CAST(NULL AS BIGINT), CAST('-Infinity' AS DOUBLE), 'c', NULL,
           NULL, NULL, 'y'),
          (4, CAST(7 AS BIGINT), 0.1 + 0.2, 'd', true,
           array(named_struct('topic', NULL, 'partition', 2)), map('z', CAST(NULL AS DOUBLE)), '')
        AS v(i, l, d, s, b, tps, m, n)
    """)


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def test_batched_rows_equal_collect(spark):
    df = _typed(spark)
    agg = df.groupBy("b").count()
    b = CollectBatcher(spark)
    (got, got_agg), = b.run([lambda: b.collect_many(df, agg)])
    want = df.collect()
    assert _same([list(r) for r in got], [list(r) for r in want])
    assert [r.asDict(recursive=True).keys() for r in got] == [r.asDict(recursive=True).keys() for r in want]
    assert got[0]["tps"][0]["topic"] == "t" and got[0]["tps"][0].partition == 0
    assert sorted(map(tuple, got_agg), key=str) == sorted(map(tuple, agg.collect()), key=str)
    assert b.rounds == 1 and b.singles == 0


@pytest.mark.parametrize("result_tasks", [None, 1, 2])
def test_row_order_of_each_dataframe_is_kept_however_the_result_stage_is_split(spark, result_tasks):
    from pyspark.sql import functions as F

    spread = spark.range(0, 2000, numPartitions=7).withColumn("x", (F.col("id") * 7919) % 1000)
    ordered = spread.orderBy(F.col("x").desc(), "id")
    b = CollectBatcher(spark, result_tasks)
    (got_spread, got_ordered), = b.run([lambda: b.collect_many(spread, ordered)])
    assert [tuple(r) for r in got_spread] == [tuple(r) for r in spread.collect()]
    assert [tuple(r) for r in got_ordered] == [tuple(r) for r in ordered.collect()]
    assert b.rounds == 1 and b.singles == 0


def test_tasks_share_one_round_and_dependent_collects_take_another(spark):
    b = CollectBatcher(spark)

    def first():
        return b.collect(spark.range(3))

    def dependent():
        n = len(b.collect(spark.range(5)))
        return b.collect(spark.range(n * 2))

    got = b.run([first, dependent])
    assert [r.id for r in got[0]] == [0, 1, 2]
    assert [r.id for r in got[1]] == list(range(10))
    assert len(b.log) == 2          # two rounds: the second served alone (one DataFrame)


def test_a_failing_query_fails_only_its_task(spark):
    b = CollectBatcher(spark)
    bad = spark.range(3).selectExpr("assert_true(id < 1, 'boom') AS x")
    got = b.run([lambda: b.collect(spark.range(2)), lambda: b.collect(bad), lambda: 1 / 0])
    assert [r.id for r in got[0]] == [0, 1]
    assert isinstance(got[1], Exception) and "boom" in str(got[1])
    assert isinstance(got[2], ZeroDivisionError)


def test_duplicate_column_names_are_collected_alone(spark):
    a = spark.range(2).selectExpr("id", "id * 10 AS v")
    dup = a.alias("x").join(a.alias("y"), "id").select("x.v", "y.v")
    assert not _portable(dup.schema)
    b = CollectBatcher(spark)
    got = b.run([lambda: b.collect(dup), lambda: b.collect(spark.range(1))])
    assert [tuple(r) for r in got[0]] == [tuple(r) for r in dup.collect()]
    assert b.singles == 1


def test_outside_a_task_collect_is_plain(spark):
    b = CollectBatcher(spark)
    assert [r.id for r in b.collect(spark.range(2))] == [0, 1]
    assert b.rounds == 0


def test_queries_sharing_a_pinned_table_and_self_joins_in_one_round(spark):
    from pyspark.sql import functions as F

    from conformance.pipeline.derived import pin

    p = pin(spark.range(0, 50).withColumn("g", F.col("id") % 4))
    pairs = p.alias("l").join(p.alias("r"), F.col("l.id") == F.col("r.id") + 1).select("l.id", F.col("r.g").alias("rg"))
    groups = p.groupBy("g").agg(F.count("*").alias("n")).orderBy("g")
    b = CollectBatcher(spark, 1)
    (got_pairs, got_groups, got_p), = b.run([lambda: b.collect_many(pairs, groups, p)])
    assert sorted(map(tuple, got_pairs)) == sorted(map(tuple, pairs.collect())) and len(got_pairs) == 49
    assert [tuple(r) for r in got_groups] == [tuple(r) for r in groups.collect()]
    assert [tuple(r) for r in got_p] == [tuple(r) for r in p.collect()]
    assert b.rounds == 1 and b.singles == 0
