"""Spark's own log output: errors only, from the JVM's first line.

Spark logs through log4j2 to stderr. Without a configuration of its own it uses its default
profile (level INFO, announced on stderr), and :func:`pyspark.SparkContext.setLogLevel` only
applies once the context exists, so the warnings of its start (native Hadoop library, loopback
address, ...) and of the judge's jobs would reach the terminal of ``conformance run`` and
``conformance report``, where they read like the suite's own problems.

:func:`conf_dir` writes a Spark configuration directory holding only ``log4j2.properties``
(root level ``error``, to stderr) into the cache; :mod:`conformance.pipeline.session` points
``SPARK_CONF_DIR`` at it before Spark starts (stock Spark reads its log configuration from
there: no JVM option, no extra jar). A ``SPARK_CONF_DIR`` the user set is left alone.

Guarantee: :func:`conf_dir` is idempotent and safe for concurrent processes (the file is
replaced atomically, and only when its content differs).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from conformance import config

#: log4j2 configuration of the pipeline's Spark: errors only, on stderr.
LOG4J2_PROPERTIES = """\
# Written by conformance.pipeline.spark_logging: Spark logs errors only (stderr).
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
appender.console.type = Console
appender.console.name = stderr
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
# PySpark's gateway starts Spark's logging as an interactive shell's: unless its logger has a level
# of its own, Spark lowers the console threshold to WARN and announces "Setting default log level".
logger.pygateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.pygateway.level = error
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
"""


def conf_dir() -> Path:
    """The Spark configuration directory (under the cache) holding :data:`LOG4J2_PROPERTIES`."""
    d = config.CACHE_DIR / "spark-conf"
    target = d / "log4j2.properties"
    try:
        if target.read_text(encoding="utf-8") == LOG4J2_PROPERTIES:
            return d
    except OSError:
        pass
    d.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".log4j2.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(LOG4J2_PROPERTIES)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return d
