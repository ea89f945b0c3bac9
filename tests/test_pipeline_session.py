"""The judge's Spark session: no JVM option of the suite's on any driver.

``-XX:TieredStopAtLevel=1`` (the one option the project allows for a local driver) shrinks the
code cache to 48 MB, and a 21-cell judge crashed on it (config.SPARK_LOCAL_DRIVER_JAVA_OPTIONS says
so): the local driver runs without it, as a cluster the user names with --spark-master does (its
driver's JVM is the cluster's business; tests/test_pipeline_spark_master.py shows it on a real
standalone cluster). The local case is shown on this process's real driver JVM: its command line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance import config
from conformance.pipeline.session import driver_settings, get_session, is_local

OPTION = "spark.driver.extraJavaOptions"


@pytest.mark.parametrize("master", ["local", "local[1]", "local[*]", "local[4,2]"])
def test_a_local_master_gets_no_jvm_option(master):
    assert is_local(master)
    settings = driver_settings(master)
    assert config.SPARK_LOCAL_DRIVER_JAVA_OPTIONS == "" and OPTION not in settings
    assert settings["spark.driver.bindAddress"] == config.HOST


@pytest.mark.parametrize("master", ["spark://127.0.0.1:7077", "spark://a:7077,b:7077", "yarn", "k8s://https://k:6443",
                                    "local-cluster[2,1,1024]"])
def test_a_cluster_gets_no_jvm_option(master):
    # local-cluster starts workers of their own: a cluster here, though on this machine (its driver
    # keeps the loopback address, which a named remote cluster does not).
    assert not is_local(master)
    settings = driver_settings(master)
    assert OPTION not in settings and not any("-XX:" in v for v in settings.values())
    assert settings["spark.driver.memory"] == config.SPARK_CONF["spark.driver.memory"]
    assert ("spark.driver.host" in settings) == master.startswith("local")


def test_the_local_driver_jvm_keeps_its_default_code_cache():
    spark = get_session()
    assert is_local(spark.sparkContext.master)
    pid = spark.sparkContext._gateway.proc.pid
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert not any(a.startswith(b"-XX:TieredStopAtLevel") for a in argv), argv
