"""The run: the top room. ``conformance run`` and ``reproduce`` (:mod:`~conformance.run.command`)
and the matrix of cells they drive, judge and report (:mod:`~conformance.run.matrix`); what they
and ``conformance plan`` check before anything starts is :mod:`conformance.preflight`."""
