"""The small-batch driver's plan rule and class archive (conformance.pipeline.driver_jvm).

The rule must drop only shuffles that move nothing (one partition to one partition) and leave
every row as it was; the archive and the rule are accelerators: without them a driver starts and
judges as before.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance import config
from conformance.pipeline import driver_jvm

pytestmark = pytest.mark.slow

_PROBE = """
import json, sys
from pyspark.sql import SparkSession, functions as F
b = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
     .config("spark.sql.adaptive.enabled", "false").config("spark.sql.shuffle.partitions", "1")
     .config("spark.sql.autoBroadcastJoinThreshold", "-1"))
for k, v in json.loads(sys.argv[1]).items():
    b = b.config(k, v)
s = b.getOrCreate()
df = s.range(300).withColumn("a", F.col("id") % 7).withColumn("b", F.col("id") % 5).repartition(3)
pin = lambda d: d.coalesce(1).localCheckpoint(eager=False)
c, d, e = pin(df), pin(df.select("a", F.col("b").alias("b2"))), pin(df.select("id", "b", (F.col("id") * 2).alias("x")))
inner_then_left = c.join(d, "a").join(e, ["id", "b"], "left")                 # the shape the planner reshuffles
union_then_agg = c.unionByName(c).groupBy("a").count()                         # two partitions: must stay shuffled
wide = pin(df.select("id", F.when(F.col("a") > 2, F.col("id").cast("string")).alias("s"),
                     F.array("a", "b").alias("arr"), F.struct("a", F.col("b").cast("string").alias("t")).alias("st")))
scans = wide.where(F.col("id") % 3 == 0).select("s", "arr", "st").orderBy("s", "arr")   # stored unsafe rows
python_rows = (s.createDataFrame([(i, str(i) if i % 2 else None, [i, i]) for i in range(40)], "i long, s string, l array<long>")
               .groupBy("s").agg(F.sum("i"), F.collect_list("l")).orderBy("s"))      # rows of another kind
out = {}
for name, q in (("inner_then_left", inner_then_left), ("union_then_agg", union_then_agg), ("scans", scans),
                ("python_rows", python_rows)):
    executed = q._jdf.queryExecution().executedPlan()
    plan = executed.toString()
    leaves = executed.collectLeaves()
    out[name] = {"shuffles": plan.count("Exchange hashpartitioning"), "rows": json.loads(json.dumps(q.collect())),
                 "leaves": sorted({leaves.apply(i).getClass().getSimpleName() for i in range(leaves.size())})}
print("RESULT " + json.dumps(out))
"""


def _probe(conf: dict[str, str]) -> dict:
    done = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(conf)], capture_output=True, text=True, timeout=300)
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line, done.stderr[-3000:]
    return json.loads(line[len("RESULT "):])


@pytest.fixture(scope="module")
def jar(tmp_path_factory) -> Path:
    old = config.SPARK_DRIVER_DIR
    config.SPARK_DRIVER_DIR = tmp_path_factory.mktemp("spark-driver")
    try:
        built = driver_jvm.ensure_rules_jar()
        assert built is not None and built.is_file()
        yield built
    finally:
        config.SPARK_DRIVER_DIR = old


@pytest.fixture(scope="module")
def probes(jar) -> tuple[dict, dict]:
    """The probe's queries on stock Spark and with the plan rule (each a fresh driver, run once for the module)."""
    return _probe({}), _probe({"spark.driver.extraClassPath": str(jar), "spark.sql.extensions": driver_jvm.RULES_CLASS})


def test_rule_drops_only_shuffles_that_move_nothing_and_keeps_every_row(probes):
    stock, ruled = probes
    assert stock["inner_then_left"]["shuffles"] == 2          # what the rule is for
    assert ruled["inner_then_left"]["shuffles"] == 0
    assert ruled["union_then_agg"]["shuffles"] == stock["union_then_agg"]["shuffles"] == 1
    assert {k: v["rows"] for k, v in ruled.items()} == {k: v["rows"] for k, v in stock.items()}   # same rows
    assert len(ruled["inner_then_left"]["rows"]) > 1000


def test_rule_scans_existing_rdds_without_copying_and_keeps_every_row(probes):
    stock, ruled = probes
    for name in ("inner_then_left", "scans", "python_rows"):
        assert stock[name]["leaves"] == ["RDDScanExec"], name
        assert ruled[name]["leaves"] == ["PinnedScanExec"], name      # what the rule is for
        assert ruled[name]["rows"] == stock[name]["rows"], name      # pinned rows handed on, Python rows projected
    assert len(ruled["scans"]["rows"]) == 100 and len(ruled["python_rows"]["rows"]) == 21
    assert any(r[0] is None for r in ruled["scans"]["rows"]) and any(r[0] is None for r in ruled["python_rows"]["rows"])


_SESSION_PROBE = """
import json, sys
from pyspark.sql import SparkSession
from conformance.pipeline import session
b = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
for k, v in json.loads(sys.argv[1]).items():
    b = b.config(k, v)
s = session._without_mllib_functions(b) if sys.argv[2] == "helper" else b.getOrCreate()
jvm = s._jvm
internal = getattr(getattr(jvm.org.apache.spark.sql.catalyst.analysis, "FunctionRegistry$"), "MODULE$").internal()
print("RESULT " + json.dumps({
    "mllib_functions": "vector_to_array" in internal.listFunction().toString(),
    "rule": "SmallBatchRules" in s._jsparkSession.sessionState().columnarRules().toString(),
    "loader": jvm.java.lang.Thread.currentThread().getContextClassLoader().getClass().getName(),
    "sum": s.range(5).groupBy().sum().first()[0]}))
"""


def _session_probe(conf: dict[str, str], how: str) -> dict:
    done = subprocess.run([sys.executable, "-c", _SESSION_PROBE, json.dumps(conf), how], capture_output=True, text=True,
                          timeout=300)
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line, done.stderr[-3000:]
    return json.loads(line[len("RESULT "):])


def test_a_session_built_with_the_jar_leaves_out_mllib_functions_only(jar):
    conf = {"spark.driver.extraClassPath": str(jar), "spark.sql.extensions": driver_jvm.RULES_CLASS}
    stock = _session_probe(conf, "stock")
    helped = _session_probe(conf, "helper")
    assert stock["mllib_functions"] is True            # what stock Spark registers, and the helper leaves out
    assert helped["mllib_functions"] is False
    assert helped["rule"] is stock["rule"] is True     # extensions named in the settings still load
    assert helped["loader"] == stock["loader"]         # the thread gets its own class loader back
    assert helped["sum"] == stock["sum"] == 10


def test_without_the_jar_the_session_is_stock():
    assert _session_probe({}, "helper")["mllib_functions"] is True


def test_jar_is_rebuilt_only_when_stale(tmp_path, monkeypatch):
    copies = {}
    for kind in ("SOURCES", "SCALA_SOURCES"):
        copies[kind] = []
        for original in getattr(driver_jvm, kind):
            copies[kind].append(tmp_path / original.name)
            copies[kind][-1].write_bytes(original.read_bytes())
        monkeypatch.setattr(driver_jvm, kind, tuple(copies[kind]))
    assert copies["SCALA_SOURCES"]
    source = copies["SCALA_SOURCES"][-1]   # a Scala source counts as much as a Java one
    monkeypatch.setattr(config, "SPARK_DRIVER_DIR", tmp_path / "driver")
    jar = driver_jvm.ensure_rules_jar()
    before = jar.stat().st_mtime_ns
    assert driver_jvm.ensure_rules_jar() == jar and jar.stat().st_mtime_ns == before
    os.utime(source, ns=(before + 10**9, before + 10**9))   # the source is newer: rebuilt
    assert driver_jvm.ensure_rules_jar() == jar and jar.stat().st_mtime_ns > before


def test_nothing_built_means_stock_spark(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "SPARK_DRIVER_DIR", tmp_path)
    assert driver_jvm.session_conf() == {}


def test_jar_without_archive_adds_the_rule_only(jar, monkeypatch):
    monkeypatch.setattr(config, "SPARK_DRIVER_DIR", jar.parent)
    conf = driver_jvm.session_conf()
    assert conf == {"spark.driver.extraClassPath": str(jar), "spark.sql.extensions": driver_jvm.RULES_CLASS}


def test_a_refused_archive_is_ignored_silently(tmp_path):
    bad = tmp_path / "bad.jsa"
    bad.write_bytes(b"not an archive")
    done = subprocess.run(["java", f"-XX:SharedArchiveFile={bad}", "-Xlog:cds=off,cds+dynamic=off", "-version"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == ""


def test_alive_tells_running_from_gone():
    assert driver_jvm._alive(os.getpid())
    p = subprocess.Popen(["true"])
    p.wait()
    assert not driver_jvm._alive(p.pid)


def test_setup_prunes_the_files_of_interpreters_that_are_gone_and_keeps_the_rest(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "SPARK_DRIVER_DIR", tmp_path)
    java, live_prefix = tmp_path / "java", tmp_path / "venv"
    java.write_text("")
    live_prefix.mkdir()
    owners = {"spark-9.9-gone": f"{java}\n{tmp_path / 'deleted-venv'}\n",      # its clone was removed
              "spark-9.9-nojava": f"{tmp_path / 'old-jdk' / 'java'}\n{live_prefix}\n",   # its JDK was removed
              "spark-9.9-live": f"{java}\n{live_prefix}\n",
              "spark-9.9-legacy": None,                                         # written before .owner existed
              driver_jvm._stem(): f"{java}\n{tmp_path / 'deleted-venv'}\n"}    # the current key: never pruned
    for stem, owner in owners.items():
        (tmp_path / f"{stem}.jsa").write_bytes(b"archive")
        (tmp_path / f"{stem}-rules.jar").write_bytes(b"jar")
        if owner is not None:
            (tmp_path / f"{stem}.owner").write_text(owner)
    assert driver_jvm.prune_stale() == ["spark-9.9-gone", "spark-9.9-nojava"]
    left = {p.name for p in tmp_path.iterdir()} - {"java", "venv"}
    kept = [s for s in owners if s not in ("spark-9.9-gone", "spark-9.9-nojava")]
    assert left == {f"{s}{suffix}" for s in kept for suffix in (".jsa", "-rules.jar")} | \
        {f"{s}.owner" for s in kept if owners[s] is not None}
    assert driver_jvm.prune_stale() == []


def test_building_the_jar_records_its_owner(jar):
    owner = jar.with_name(jar.name.replace("-rules.jar", ".owner"))
    assert owner.read_text().splitlines() == [str(driver_jvm._java()), sys.prefix]
