"""The HTML report renders in a real headless Chromium: the matrix table and a timeline SVG lay out."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from conformance import config
from conformance.pipeline.timelines import timelines
from conformance.report.site import write_site
from stories import judged_catalog

pytestmark = pytest.mark.slow


def _chromium() -> str:
    for name in config.CHROMIUM_CANDIDATES:
        if shutil.which(name):
            return shutil.which(name)
    script = config.REPO_ROOT / "scripts" / "install-chromium.sh"
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=600)
    for name in config.CHROMIUM_CANDIDATES:
        if shutil.which(name):
            return shutil.which(name)
    pytest.skip(f"chromium could not be installed by {script}: {(done.stderr or done.stdout).strip()[-300:]}")


def test_report_renders_in_headless_chromium(tmp_path_factory, tmp_path):
    browser = _chromium()
    out, verdicts = judged_catalog(tmp_path_factory.mktemp("pipeline-catalog"))
    report = tmp_path / "report"
    write_site(verdicts, report, timelines(out))
    argv = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000",
            "--dump-dom", (report / "index.html").as_uri()]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    dom = done.stdout
    assert '<table class="matrix"' in dom and '<svg class="timeline"' in dom
    # The page's own script measured the laid-out elements after load.
    m = re.search(r'data-rendered="([^"]+)"', dom)
    assert m, "the load handler did not run"
    rendered = json.loads(m.group(1).replace("&quot;", '"'))
    assert rendered["timeline"] > 100 and rendered["bars"] > 0 and rendered["matrix_rows"] >= 2
    # Laid out, nothing is cut and no two fault labels collide; every timeline has its time axis
    # and every cell its reproduce command.
    assert rendered["cut"] == 0 and rendered["label_collisions"] == 0, rendered
    assert rendered["ticks"] >= 2 * dom.count('<svg class="timeline"') and rendered["commands"] == len(verdicts)
    assert_structure(dom)
    shot = tmp_path / "shot.png"
    argv = [a for a in argv if a != "--dump-dom"]
    argv.insert(-1, f"--screenshot={shot}")
    argv.insert(-1, "--window-size=1200,900")
    subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert shot.is_file() and shot.stat().st_size > 20000   # a blank page is ~7 kB


def assert_structure(dom: str) -> dict:
    """The page's structure as its own script measured it after load: the first table is the member x
    member grid across every scenario and broker; every entry shows ONE status and links to the cells
    behind it, each link to a cell section of the page; no "0/0" anywhere. Returns the measures."""
    m = re.search(r'data-structure="([^"]+)"', dom)
    assert m, "the load handler did not measure the structure"
    s = json.loads(m.group(1).replace("&quot;", '"'))
    assert s["first_table"] == "grid" and s["entries"] > 0, s
    assert s["not_one_status"] == 0 and s["entries_without_cell_link"] == 0 and s["broken_cell_links"] == 0, s
    assert not s["zero_of_zero"], s
    return s


def render_in_chromium(index, profile, screenshot=None) -> str:
    """The DOM of ``index`` after load in headless Chromium (and a 1400x1000 screenshot when asked)."""
    browser = _chromium()
    argv = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--virtual-time-budget=5000",
            "--dump-dom", index.as_uri()]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    if screenshot is not None:
        shot = [a for a in argv if a != "--dump-dom"]
        shot[-1:-1] = [f"--screenshot={screenshot}", "--window-size=1400,1000"]
        subprocess.run(shot, capture_output=True, text=True, timeout=120)
    return done.stdout
