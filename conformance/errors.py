"""The suite's own error types.

``UsageError`` is misuse by the person running the suite (a bad member spec,
an unknown scenario, a malformed scenario file): the CLI prints its message on
one line and exits 2, never a traceback. ``SuiteError`` is the suite failing to
do its job (a broker that does not start, a build that fails): also exit 2,
with the explanation. Violations of invariants are neither: they are verdicts.
"""


class SuiteError(Exception):
    """The suite could not do what was asked; the message says what and why."""


class UsageError(SuiteError):
    """The input is wrong; the message says what is wrong and what to do instead."""
