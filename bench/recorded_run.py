"""The default input of the small-run benches: a recorded real run of fixtures/real-runs/.

A real cell (reference 0.1.0, Java 4.4.0, librdkafka 2.16.1 on broker 4.4.0, seed 26; see
fixtures/real-runs/README.md) has real timing and real volume, which a hand-made story has not.
"""

from __future__ import annotations

import tarfile
from pathlib import Path

ARCHIVE = Path(__file__).resolve().parent.parent / "fixtures" / "real-runs" / "reference-java-librdkafka--seed-26.tar.xz"


def unpack(dest: Path, archive: Path = ARCHIVE) -> Path:
    """Unpack ``archive`` (one run directory under its own name) into ``dest``; its run directory."""
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "r:xz") as tar:
        tar.extractall(dest, filter="data")
        top = {Path(name).parts[0] for name in tar.getnames()}
    [name] = top
    return dest / name
