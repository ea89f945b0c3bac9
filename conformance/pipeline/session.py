"""One SparkSession per process, configured for a small machine.

Guarantee: :func:`get_session` returns the same session for every call in a
process (Spark start costs seconds); the master of the first call wins,
and a later call asking for a different master raises ``SuiteError`` rather
than silently judging on the wrong cluster. The session's view of the JVM
remembers the classes and functions it looks up (:mod:`conformance.pipeline.jvm_lookups`).
"""

from __future__ import annotations

import os
import sys
import threading

from conformance import config
from conformance.pipeline import driver_jvm, jvm_lookups
from conformance.errors import SuiteError

_lock = threading.Lock()
_session = None
_master: str | None = None


def get_session(master: str | None = None, small: bool = False):
    """The process's SparkSession (created on first use).

    ``small``: the first use judges small inputs; a session started now on
    a local master gets ``config.PIPELINE_SMALL_DRIVER_JAVA_OPTIONS`` and what
    :mod:`conformance.pipeline.driver_jvm` provides once setup built it (a plan
    rule, a class archive); one started on a local master for large inputs gets
    ``config.PIPELINE_LARGE_DRIVER_JAVA_OPTIONS``. Any session started on a local master gets the
    driver jar on its class path, and is then built without MLlib's SQL functions
    (:func:`_without_mllib_functions`). It changes nothing for a session that already runs.
    """
    global _session, _master
    wanted = master or config.SPARK_MASTER
    with _lock:
        if _session is not None:
            if master and master != _master:
                raise SuiteError(f"a SparkSession on {_master!r} already runs in this process; cannot switch to {master!r}")
            return _session
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        if wanted.startswith("local"):
            # The JVM resolves its own address before reading spark.driver.bindAddress; on a host
            # whose name maps to loopback it warns and picks another interface unless told.
            os.environ.setdefault("SPARK_LOCAL_IP", config.HOST)
        try:
            from pyspark.sql import SparkSession

            builder = SparkSession.builder.master(wanted).appName("conformance-pipeline")
            for key, value in config.SPARK_CONF.items():
                if wanted.startswith("local") or not key.startswith("spark.driver.") or key == "spark.driver.memory":
                    builder = builder.config(key, value)
            if wanted.startswith("local"):
                extra = driver_jvm.session_conf(small)
                options = config.PIPELINE_SMALL_DRIVER_JAVA_OPTIONS if small else config.PIPELINE_LARGE_DRIVER_JAVA_OPTIONS
                options = f"{options} {extra.get('spark.driver.extraJavaOptions', '')}"
                extra["spark.driver.extraJavaOptions"] = options.strip()
                for key, value in extra.items():
                    builder = builder.config(key, value)
            _session = _without_mllib_functions(builder)
            jvm_lookups.remember(_session.sparkContext._jvm)
            _session.sparkContext.setLogLevel(config.SPARK_LOG_LEVEL)
        except Exception as exc:  # JVM missing, master unreachable, ...
            raise SuiteError(f"could not start Spark on {wanted!r}: {exc}") from exc
        _master = wanted
        return _session


def _without_mllib_functions(builder):
    """``builder.getOrCreate()``, the session being built without MLlib's SQL functions when the
    driver jar is on the class path (``jvm/WithoutMllibFunctions.java``: no check uses them, and
    registering them starts Scala's runtime reflection, ~0.5 CPU-s on the critical path of the
    driver's start; the first JSON parse starts it later, on an executor thread). The
    SparkContext is started first, as ``getOrCreate`` would, so that the helper can be found; the
    session is then built on the same JVM thread (PySpark pins each Python thread to one)."""
    from pyspark import SparkConf, SparkContext

    conf = SparkConf()
    for key, value in builder._options.items():
        conf.set(key, value)
    helper = jar_class(SparkContext.getOrCreate(conf), "WithoutMllibFunctions")
    if helper is None:
        return builder.getOrCreate()
    previous = helper.install()
    try:
        return builder.getOrCreate()
    finally:
        helper.restore(previous)


def jar_class(spark, name: str):
    """The class ``conformance.pipeline.<name>`` of the driver jar (:mod:`conformance.pipeline.driver_jvm`),
    or None when the driver of ``spark`` (a SparkSession or SparkContext) does not have the jar on its class path."""
    from py4j.java_gateway import JavaClass

    found = getattr(spark._jvm.conformance.pipeline, name)
    return found if isinstance(found, JavaClass) else None


#: The call site Spark records for every job, RDD and SQL execution of a pipeline thread (see :func:`name_jobs`).
CALL_SITE = "conformance pipeline"


def name_jobs() -> dict[str, str | None]:
    """Make Spark record :data:`CALL_SITE` as the call site of what the calling thread starts, and
    return the thread's previous values (for :func:`restore_names`).

    Without a call site set, Spark walks the thread's stack and matches every frame against its
    own packages for each RDD it creates and each SQL execution it starts (~5 % of the driver's
    time in a small judge, whose combined action alone creates hundreds of RDDs). Nothing else
    changes: jobs run the same, only their recorded call site is this name. No-op without a
    running session."""
    from pyspark import SparkContext

    sc = SparkContext._active_spark_context
    if sc is None:
        return {}
    previous = {}
    for key in ("callSite.short", "callSite.long"):
        previous[key] = sc.getLocalProperty(key)
        sc.setLocalProperty(key, CALL_SITE)
    return previous


def restore_names(previous: dict[str, str | None]) -> None:
    """Undo :func:`name_jobs` in the calling thread."""
    from pyspark import SparkContext

    sc = SparkContext._active_spark_context
    if sc is not None:
        for key, value in previous.items():
            sc.setLocalProperty(key, value)


def stop_session() -> None:
    """Stop the process's session (tests and benches call this at the end)."""
    global _session, _master
    with _lock:
        if _session is not None:
            _session.stop()
        _session = None
        _master = None
