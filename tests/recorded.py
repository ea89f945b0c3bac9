"""One judge for every test module that judges copies of recorded real runs.

A module that judges copies (and mutants) of recorded runs declares them with a module-level
function ``recorded_copies(root: Path) -> dict[str, Path]``: it builds its run directories under
``root`` (its own directory) and returns them by the names its tests use. Its tests then take the
``recorded_verdicts`` fixture (tests/conftest.py): that module's verdicts by those names.

Guarantees:

- One ``conformance report`` (one Spark start) judges the copies of every module that declares
  them and has a selected test taking ``recorded_verdicts`` in this pytest session; a session of
  one module (``pytest tests/test_client_bugs.py``, or ``-k`` on some of its tests) builds and
  judges that module's copies only.
- A module's names are its own: its copies live under ``root/<module>/``, and a verdict is handed
  back to the module whose directory it judged.
- Run ids are unique over everything judged together (the judge keys a run by its id and tells two
  copies with one id apart only by an id it makes up, ``id@dir``, which no module's test expects): a
  clash stops the judge and names both copies.
- Copies whose files are byte for byte the same but for the run id in their manifests (one recorded
  run unpacked by several modules, unmutated) are judged once: a verdict is a function of a run's
  files, and names the run only as ``run`` (its id) and by its directory (``run_dir`` and the files
  of damaged lines), which each copy gets as its own.
- A module whose ``recorded_copies`` raises gets that error in its own tests; the other modules are
  still judged.

The helpers below are the only unpack, copy and rename code of these modules.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Callable

#: Seconds the one report may take. Measured: the 16 copies of test_client_bugs, test_e5_not_yet_applied
#: and test_r5_recorded_runs (190 MB of histories and wire) took 15 min with the load average at 15-35
#: on 2 cores, and test_consumer_protocol_recorded's 9 alone took 1119 s (load above 20): the sum
#: and some room for a busier machine.
JUDGE_TIMEOUT = 3600
#: The pytest-timeout of a test taking ``recorded_verdicts`` (the first one pays for the shared judge):
#: the judge's bound plus pyproject's per-test timeout (900 s) for the copies' build and the test itself.
TEST_TIMEOUT = JUDGE_TIMEOUT + 900

DECLARATION = "recorded_copies"


def unpack(archive: Path, into: Path) -> Path:
    """Unpack ``archive`` (one run directory) into the new directory ``into``; that run directory."""
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    (run,) = into.iterdir()
    return run


def rename(run: Path, suffix: str) -> None:
    """Append ``suffix`` to the run id in ``run``'s manifest: a mutant is a run of its own."""
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    manifest["run_id"] += suffix
    (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def copy_run(src: Path, dst: Path, suffix: str = "") -> Path:
    """A copy of run directory ``src`` at ``dst`` (the run id gets ``suffix``, if any); ``dst``."""
    shutil.copytree(src, dst)
    if suffix:
        rename(dst, suffix)
    return dst


def read_jsonl(path: Path) -> list[dict]:
    """The records of a JSON-lines file (a history or a wire capture), in order."""
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def write_jsonl(path: Path, records: list[dict]) -> None:
    """Write ``records`` to ``path``, one JSON object a line."""
    path.write_text("".join(json.dumps(x) + "\n" for x in records), encoding="utf-8")


@dataclass
class Judged:
    """What the one judge of a session gave: verdicts by module name, then copy name; the error of
    a module whose copies could not be built."""

    verdicts: dict[str, dict[str, dict]] = field(default_factory=dict)
    errors: dict[str, BaseException] = field(default_factory=dict)
    stderr: str = ""      # what the one ``conformance report`` wrote on its standard error
    tables: Path | None = None    # the tables it wrote (conformance.pipeline.ingest.write_tables)
    #: Each copy's directory -> the run id its rows have in ``tables`` (a copy judged as another
    #: copy of the same content has that copy's rows).
    judged_as: dict[Path, str] = field(default_factory=dict)

    def of(self, module: ModuleType) -> dict[str, dict]:
        """``module``'s verdicts by the names its ``recorded_copies`` gave; re-raises its build error."""
        name = module.__name__
        if name in self.errors:
            raise self.errors[name]
        if name not in self.verdicts:
            raise LookupError(f"{name} declares no {DECLARATION}(root) or has no selected test taking "
                              f"recorded_verdicts in this session")
        return self.verdicts[name]


def judge(modules: list[ModuleType], root: Path) -> Judged:
    """Build every module's copies under ``root/<module>/`` and judge them all with one
    ``conformance report``; see the module docstring for what is guaranteed."""
    judged = Judged()
    owner: dict[Path, tuple[str, str]] = {}
    for module in modules:
        build: Callable[[Path], dict[str, Path]] = getattr(module, DECLARATION)
        own = root / module.__name__
        own.mkdir(parents=True)
        try:
            copies = build(own)
        except Exception as e:          # that module's tests show it; the others are judged
            judged.errors[module.__name__] = e
            continue
        judged.verdicts[module.__name__] = {}
        for name, run in copies.items():
            owner[run.resolve()] = (module.__name__, name)
    _unique_run_ids(owner)
    if not owner:
        return judged
    same = _same_content(list(owner))
    out = root / "out"
    done = subprocess.run([sys.executable, "-m", "conformance", "report", "--out", str(out), *map(str, same)],
                          capture_output=True, text=True, timeout=JUDGE_TIMEOUT)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    judged.stderr, judged.tables = done.stderr, out / "pipeline" / "tables"
    for v in json.loads((out / "pipeline" / "verdicts.json").read_text()):
        judged_dir = Path(v["run_dir"]).resolve()
        for run in same[judged_dir]:
            judged.judged_as[run] = v["run"]
            module, name = owner[run]
            judged.verdicts[module][name] = v if run == judged_dir else _as_copy(v, run)
    return judged


def _as_copy(verdict: dict, run: Path) -> dict:
    """``verdict`` as the judge gives it for ``run``, a copy of the judged run but for its id: the
    judged run's directory, wherever a path names it, is ``run``'s; ``run`` is ``run``'s id."""
    judged, mine = json.dumps(verdict["run_dir"])[1:-1], json.dumps(str(run))[1:-1]
    copied = json.loads(json.dumps(verdict).replace(judged, mine))
    copied["run"] = _run_id(run)
    return copied


def _run_id(run: Path) -> str:
    """``run``'s id as the judge takes it: its manifest's, else (an unreadable manifest, a damaged
    copy's) its directory's name (conformance.pipeline.ingest.stage)."""
    try:
        return json.loads((run / "manifest.json").read_text(encoding="utf-8"))["run_id"]
    except (ValueError, KeyError, TypeError):
        return run.name


def _same_content(runs: list[Path]) -> dict[Path, list[Path]]:
    """``runs`` grouped by content (every file's path and bytes, the manifest's run id left out):
    the first of each group, in ``runs``' order, maps to the whole group."""
    groups: dict[str, list[Path]] = {}
    for run in runs:
        digest = hashlib.sha256()
        for f in sorted(p for p in run.rglob("*") if p.is_file()):
            data = f.read_bytes()
            if f == run / "manifest.json":
                try:
                    manifest = json.loads(data)
                    del manifest["run_id"]
                    data = json.dumps(manifest, sort_keys=True).encode()
                except (ValueError, KeyError, TypeError):
                    pass        # a damaged manifest: its bytes as they are
            digest.update(f"{f.relative_to(run).as_posix()}\0{len(data)}\0".encode())
            digest.update(data)
        groups.setdefault(digest.hexdigest(), []).append(run)
    return {group[0]: group for group in groups.values()}


def _unique_run_ids(owner: dict[Path, tuple[str, str]]) -> None:
    seen: dict[str, tuple[str, str]] = {}
    for run, who in owner.items():
        run_id = _run_id(run)
        assert run_id not in seen, (f"copies {seen[run_id]} and {who} have one run id {run_id!r}: the judge "
                                    f"would name one of them by an id of its own; give one a suffix (recorded.rename)")
        seen[run_id] = who
