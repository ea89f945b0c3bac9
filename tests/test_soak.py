"""Nightly: the leak soak (bench/soak.py; on demand: ``make soak``).

20 consecutive real cells (rolling-restart, reference + librdkafka), 5 of them interrupted with
SIGINT at seeded points while their scenario runs. Afterwards no process of the cells, no
listening port they opened and nothing in their temporary directory remains, and every
interrupted cell left its run directory with partial verdicts (``summary.json``). The counts are
printed (``pytest -s`` shows them).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.nightly, pytest.mark.slow, pytest.mark.timeout(7200)]


def _soak_module():
    path = Path(__file__).resolve().parent.parent / "bench" / "soak.py"
    spec = importlib.util.spec_from_file_location("conformance_bench_soak", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_soak_leaves_nothing_behind(tmp_path: Path) -> None:
    soak = _soak_module()
    result = soak.soak(tmp_path, cells=20, interrupted=5, seed=26)
    print(result.counts())
    assert len(result.cells) == 20 and len(result.interrupted) == 5
    assert result.leaked_processes == []
    assert result.leaked_ports == []
    assert result.leaked_temp == []
    assert result.interrupted_ok == 5, [(c.index, c.exit_code, c.run_dir_kept, c.partial_verdicts, c.problems)
                                        for c in result.interrupted]
    assert [c.problems for c in result.cells if c.problems] == []
