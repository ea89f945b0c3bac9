"""One SparkSession per process, configured for a small machine.

Guarantee: :func:`get_session` returns the same session for every call in a
process (Spark start costs seconds); the master of the first call wins,
and a later call asking for a different master raises ``SuiteError`` rather
than silently judging on the wrong cluster. The session is stock Spark with
the settings of :func:`driver_settings`: ``config.SPARK_CONF``, and on a local master only one JVM
option for the driver it launches (``config.SPARK_LOCAL_DRIVER_JAVA_OPTIONS``); no extra jars, no
session extensions. On a cluster the user names, the driver's JVM and address are left to it.
"""

from __future__ import annotations

import os
import sys
import threading

from conformance import config
from conformance.errors import SuiteError
from conformance.pipeline import spark_logging

_lock = threading.Lock()
_session = None
_master: str | None = None


def is_local(master: str) -> bool:
    """Whether ``master`` runs everything in the driver's own JVM (``local``, ``local[N]``, ``local[*]``,
    ``local[N,F]``); ``local-cluster[...]`` starts workers of its own, so it is a cluster here."""
    return master == "local" or master.startswith("local[")


def driver_settings(master: str) -> dict[str, str]:
    """The Spark settings a session on ``master`` starts with.

    ``config.SPARK_CONF``; the driver's address settings only on a master of this machine
    (``local...``, ``local-cluster[...]``: on a cluster the driver's address is the cluster's
    business; ``spark.driver.memory`` stays); ``spark.driver.extraJavaOptions`` =
    ``config.SPARK_LOCAL_DRIVER_JAVA_OPTIONS`` on a local master only (:func:`is_local`), never on
    a cluster the user names."""
    settings = {key: value for key, value in config.SPARK_CONF.items()
                if master.startswith("local") or not key.startswith("spark.driver.") or key == "spark.driver.memory"}
    if is_local(master) and config.SPARK_LOCAL_DRIVER_JAVA_OPTIONS:
        settings["spark.driver.extraJavaOptions"] = config.SPARK_LOCAL_DRIVER_JAVA_OPTIONS
    return settings


def get_session(master: str | None = None):
    """The process's SparkSession, created on first use on ``master`` (default ``config.SPARK_MASTER``).

    Raises ``SuiteError`` when Spark cannot start (no JVM, unreachable master) or when a session
    on another master already runs in this process."""
    global _session, _master
    wanted = master or config.SPARK_MASTER
    with _lock:
        if _session is not None:
            if master and master != _master:
                raise SuiteError(f"a SparkSession on {_master!r} already runs in this process; cannot switch to {master!r}")
            return _session
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        # Spark's log4j2 configuration: errors only, from the JVM's start (conformance.pipeline.spark_logging).
        os.environ.setdefault("SPARK_CONF_DIR", str(spark_logging.conf_dir()))
        if wanted.startswith("local"):
            # The JVM resolves its own address before reading spark.driver.bindAddress; on a host
            # whose name maps to loopback it warns and picks another interface unless told.
            os.environ.setdefault("SPARK_LOCAL_IP", config.HOST)
        try:
            from pyspark.sql import SparkSession

            builder = SparkSession.builder.master(wanted).appName("conformance-pipeline")
            for key, value in driver_settings(wanted).items():
                builder = builder.config(key, value)
            _session = builder.getOrCreate()
            _session.sparkContext.setLogLevel(config.SPARK_LOG_LEVEL)
        except Exception as exc:  # JVM missing, master unreachable, ...
            raise SuiteError(f"could not start Spark on {wanted!r}: {exc}") from exc
        _master = wanted
        return _session


def stop_session() -> None:
    """Stop the process's session (tests and benches call this at the end)."""
    global _session, _master
    with _lock:
        if _session is not None:
            _session.stop()
        _session = None
        _master = None
