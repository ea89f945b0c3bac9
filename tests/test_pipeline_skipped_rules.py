"""The optimizer rules small batches skip (config.PIPELINE_SMALL_SKIPPED_RULES) name real,
skippable rules, and skipping them changes no plan of the pipeline: every check's query on the
hand-made story plans to the same physical plan with and without them."""

from __future__ import annotations

import re

import pytest

from conformance import config
from conformance.pipeline import derived, ingest, metrics
from conformance.pipeline.checks import CATALOG
from conformance.pipeline.session import get_session
from conformance.pipeline.synth import cooperative_story
from conformance.pipeline.verdicts import sql_conf

pytestmark = pytest.mark.slow

_RULES = "spark.sql.optimizer.excludedRules"


@pytest.fixture(scope="module")
def spark():
    return get_session()


def test_every_skipped_rule_is_a_rule_spark_may_skip(spark):
    jvm = spark._jvm
    optimizer = spark._jsparkSession.sessionState().optimizer()
    never = {optimizer.nonExcludableRules().apply(i) for i in range(optimizer.nonExcludableRules().size())}
    for name in config.PIPELINE_SMALL_SKIPPED_RULES:
        jvm.java.lang.Class.forName(name + "$")   # a Scala object: raises if the name is wrong
        assert name not in never, name


def _plans(spark, run_dir, out_dir) -> list[str]:
    """Every DataFrame the checks and the metrics collect, planned (expression ids masked: they differ per build)."""
    small = {k: v for k, v in config.PIPELINE_SMALL_SQL_CONF.items() if k != _RULES}
    with sql_conf(spark, {**small, **config.PIPELINE_SMALL_JOIN_CONF, "spark.sql.debug.maxToStringFields": "1000"}):
        inputs, _runs, _staged = ingest.build(spark, [run_dir], out_dir, derived.pin)
        t = derived.in_memory(inputs, derived.pin)
        t.pin_shared = True
        seen: list = []

        class Collector:
            def collect(self, df):
                return self.collect_many(df)[0]

            def collect_many(self, *dfs):
                seen.extend(dfs)
                return [df.collect() for df in dfs]

        t.collector = Collector()
        for check, _statement in CATALOG.values():
            check(t)
        metrics.compute(t)
        plans = []
        for df in seen:
            text = df._jdf.queryExecution().executedPlan().toString()
            plans.append(re.sub(r"#\d+L?|\[\d+\]| RDD\[\d+\]|MapPartitionsRDD\[\d+\]|plan_id=\d+|x_\d+", "#", text))
        return plans


def test_skipping_them_changes_no_plan(spark, tmp_path):
    run = cooperative_story(tmp_path / "runs", "skipped-rules")
    kept = _plans(spark, run, tmp_path / "a")
    with sql_conf(spark, {_RULES: ",".join(config.PIPELINE_SMALL_SKIPPED_RULES)}):
        skipped = _plans(spark, run, tmp_path / "b")
    assert len(kept) == len(skipped) >= 35
    assert kept == skipped
