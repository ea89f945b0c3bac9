"""The analysis pipeline: run directories -> typed tables -> invariant verdicts -> matrix.

Public API::

    from conformance.pipeline import judge, build_matrix
    verdicts = judge(run_dirs, out_dir, spark_master=None)   # contract section 7
    matrix = build_matrix(verdicts)                          # conformance.pipeline.matrix

Modules: ``session`` (one SparkSession per process), ``wire`` (Python decoding
of wire captures), ``ingest`` (tables), ``derived`` (ownership intervals,
incarnations, generations), ``checks`` (the invariant catalog), ``metrics``,
``verdicts`` (judge), ``matrix``.
"""

from __future__ import annotations


def judge(run_dirs, out_dir, spark_master=None):
    """See :func:`conformance.pipeline.verdicts.judge`."""
    from conformance.pipeline.verdicts import judge as _judge

    return _judge(run_dirs, out_dir, spark_master)


def build_matrix(verdicts):
    """See :func:`conformance.pipeline.matrix.build_matrix`."""
    from conformance.pipeline.matrix import build_matrix as _build

    return _build(verdicts)
