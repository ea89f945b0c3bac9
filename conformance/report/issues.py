"""Where a known issue is documented: the page a report links each known issue to.

A known issue's ``reference`` (:class:`conformance.members.known_issues.KnownIssue`) is either the
suite's own write-up, ``docs/client-bugs/<page>.md ...``, or an upstream one: ``owner/repo issue
N`` or ``owner/repo PR N`` (a GitHub issue or pull request), else free text such as release notes.
A client-bugs page says whether it has been filed upstream on a line ``Filed: ...`` after its
title (``Filed: no ...`` until it is).
"""

from __future__ import annotations

import re
from pathlib import Path

from conformance import config

#: The suite's write-ups of client bugs, ready to be filed upstream.
CLIENT_BUGS = "docs/client-bugs"

_PAGE = re.compile(r"(docs/client-bugs/[A-Za-z0-9._-]+\.md)")
_GITHUB = re.compile(r"^([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+) (issue|PR) #?(\d+)")


def page_of(reference: str) -> str | None:
    """The repository path of the client-bugs page ``reference`` names (None: an upstream reference)."""
    m = _PAGE.search(reference or "")
    return m.group(1) if m else None


def upstream_url(reference: str) -> str | None:
    """The GitHub address of an ``owner/repo issue N`` or ``owner/repo PR N`` reference, else None."""
    m = _GITHUB.match(reference or "")
    if not m:
        return None
    return f"https://github.com/{m.group(1)}/{'issues' if m.group(2) == 'issue' else 'pull'}/{m.group(3)}"


def filed(reference: str) -> str:
    """Whether the bug is filed upstream: the ``Filed:`` line of its client-bugs page, or "yes
    (upstream reference)" for a reference that is itself upstream's; "unknown" for a page without
    that line."""
    page = page_of(reference)
    if page is None:
        return "yes (upstream reference)"
    try:
        text = (config.REPO_ROOT / page).read_text(encoding="utf-8")
    except OSError:
        return "unknown (page missing)"
    for line in text.splitlines()[:12]:
        if line.startswith("Filed:"):
            return line[len("Filed:"):].strip()
    return "unknown"


def copy_pages(references, out_dir: Path) -> dict[str, str]:
    """Copy the client-bugs pages ``references`` name into ``out_dir/client-bugs/``; reference ->
    its href relative to ``out_dir`` (an upstream reference -> its address, when it has one). A
    page that cannot be read is left out (its reference gets no link)."""
    hrefs: dict[str, str] = {}
    for ref in sorted(set(references)):
        page = page_of(ref)
        if page is None:
            url = upstream_url(ref)
            if url:
                hrefs[ref] = url
            continue
        src = config.REPO_ROOT / page
        try:
            text = src.read_text(encoding="utf-8")
        except OSError:
            continue
        dest = Path(out_dir) / "client-bugs" / src.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
        hrefs[ref] = f"client-bugs/{src.name}"
    return hrefs
