"""The suite's own error types.

``UsageError`` is misuse by the person running the suite (a bad member spec,
an unknown scenario, a malformed scenario file): the CLI prints its message on
one line and exits 2, never a traceback. ``SuiteError`` is the suite failing to
do its job (a broker that does not start, a build that fails): also exit 2,
with the explanation. Violations of invariants are neither: they are verdicts.
:func:`one_line` keeps a message that quotes what the user typed on one line.
"""


class SuiteError(Exception):
    """The suite could not do what was asked; the message says what and why."""


class UsageError(SuiteError):
    """The input is wrong; the message says what is wrong and what to do instead."""


def one_line(text: str) -> str:
    """``text`` with every character that is not printable escaped, so that a message quoting what
    the user typed (which may hold a newline or any control character) stays one line: ``\\n``,
    ``\\x1e``; a byte of the command line that was not text (Python holds it as a lone surrogate)
    as the byte, ``\\xff``."""
    out = []
    for c in text:
        if c.isprintable():
            out.append(c)
        elif "\udc80" <= c <= "\udcff":
            out.append(f"\\x{ord(c) - 0xDC00:02x}")
        else:
            out.append(c.encode("unicode_escape").decode("ascii"))
    return "".join(out)
