"""One scenario on every supported broker (nightly tier): the broker-version slice.

Each broker version runs from its own jars and formats its storage with its own storage tool (a
newer tool's format is not readable by an older broker), so each cell's format log must name that
version's metadata level. The cell is a clean rolling restart of the reference, Java and
librdkafka: it must pass on every broker, 3.7 to 4.4 (about 1-2 min each on two cores; a broker
not yet installed is installed first, about a minute).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conformance import config

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.nightly, pytest.mark.timeout(1200)]


@pytest.mark.parametrize("broker", config.BROKER_VERSIONS)
def test_rolling_restart_passes_on_every_broker(tmp_path: Path, broker: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "conformance", "run", "--scenario", "rolling-restart",
                           "--clients", "reference,java,librdkafka", "--broker", broker, "--seed", "7",
                           "--runs-dir", str(tmp_path / "runs")], capture_output=True, text=True, timeout=1100)
    [summary] = list((tmp_path / "runs").glob("*/summary.json"))
    [cell] = json.loads(summary.read_text())["cells"]
    failing = {inv: i["violations"] for inv, i in cell["invariants"].items() if i["status"] != "pass"}
    assert proc.returncode == 0 and cell["verdict"] == "pass", (proc.returncode, cell["verdict"], failing,
                                                                proc.stderr[-2000:])
    run_dir = Path(cell["run_dir"])
    assert json.loads((run_dir / "manifest.json").read_text())["broker_version"] == broker
    formatted = re.search(r"with metadata\.version (\d+\.\d+)-IV\d+",
                          (run_dir / "logs" / "broker-format.log").read_text(errors="replace"))
    assert formatted and formatted.group(1) == ".".join(broker.split(".")[:2]), formatted
