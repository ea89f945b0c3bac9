"""What the Spark driver JVM gets beyond stock Spark: a jar (a plan rule, the batcher's combined action, a
leaner session start) and a class archive.

Both are built by ``conformance setup`` into ``config.SPARK_DRIVER_DIR`` and
are accelerators only: without them (setup not run, no ``javac``, another
JDK, a reinstalled pyspark) a judge runs as before, slower, with the same
verdicts.

The jar (``jvm/*.scala`` compiled by the Scala compiler pyspark ships, then
``jvm/*.java``, both against the interpreter's pyspark jars) is on the class
path of every driver started on a local master. It holds:

- **Plan rule** (``SmallBatchRules``), a session extension of small judges
  only. It drops the shuffles
  Spark's planner adds between one-partition inputs and one-partition outputs
  (small batches keep every table in one partition). Such a shuffle moves rows
  from one partition to one partition in order, so dropping it changes no row.
  It also plans scans of pinned tables as ``PinnedScanExec`` (Scala: Java
  cannot subclass Spark's plan nodes), which hands the stored rows on where
  Spark's scan copies every row, every column, for every query reading the
  table (interpreted without code generation: the executors' largest single
  cost on a real 12 MB run, 1.19 of 6.7 CPU-s).
- **Combined action** (``CollectUnion``): builds the batcher's union of the
  checks' queries without analysing each query again
  (:class:`conformance.pipeline.batch.CollectBatcher`).
- **Session without MLlib's SQL functions** (``WithoutMllibFunctions``): a
  context class loader under which the session being built does not load the
  MLlib jar's session extension, whose functions (``vector_to_array``, ...),
  used by no check, start Scala's runtime reflection: ~0.5 CPU-s on the critical
  path of every driver's start, moved to the first JSON parse, which runs on an
  executor thread (:func:`conformance.pipeline.session.get_session`).
- **Class archive** (class data sharing): a fresh JVM spends much of a small
  judge loading and verifying Spark's classes. Setup judges the hand-made
  cooperative story once with ``-XX:ArchiveClassesAtExit`` (rule jar on the
  class path, as at use); later drivers map the archive
  (``-XX:SharedArchiveFile``). A JVM that refuses it starts as before and
  says nothing (its CDS logging is off).

Guarantees: files are keyed by the pyspark version, the ``java`` executable
and the interpreter; each is written under a temporary name and renamed into
place once complete (the archive after the JVM that wrote it has exited), and
rebuilt when older than what it was built from. Beside them a ``.owner`` file
names the ``java`` and interpreter prefix they were built for; setup deletes
the files of any key whose ``java`` or interpreter is gone (a removed clone or
virtualenv), so the cache holds one archive (about 160 MB) per live
interpreter, not one per interpreter ever set up. Files without an ``.owner``
(written before it existed) are left alone.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from conformance import config
from conformance.errors import SuiteError

#: Environment variable naming where a training driver dumps its class archive.
DUMP_ENV = "CONFORMANCE_SPARK_CLASS_DUMP"
#: The Java sources of the rule jar (the plan rule and :mod:`conformance.pipeline.batch`'s combined action).
SOURCES = tuple(sorted((Path(__file__).parent / "jvm").glob("*.java")))
#: The Scala sources of the rule jar (plan nodes: Java cannot subclass Spark's generic tree classes),
#: compiled first, by the Scala compiler pyspark ships (reading the Java sources for their types),
#: so that the Java sources can use them.
SCALA_SOURCES = tuple(sorted((Path(__file__).parent / "jvm").glob("*.scala")))
RULES_CLASS = "conformance.pipeline.SmallBatchRules"
_QUIET = "-Xlog:cds=off,cds+dynamic=off"


def _java(tool: str = "java") -> Path | None:
    home = os.environ.get("JAVA_HOME")
    found = Path(home) / "bin" / tool if home else (Path(w) if (w := shutil.which(tool)) else None)
    return found.resolve() if found and found.exists() else None


def _jars_dir() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def _stem() -> str | None:
    """``spark-<version>-<key>`` for this pyspark, java and interpreter (None: no java)."""
    import pyspark

    java = _java()
    if java is None:
        return None
    key = hashlib.sha256(f"{java}\n{sys.prefix}".encode()).hexdigest()[:12]
    return f"spark-{pyspark.__version__}-{key}"


def _record_owner(stem: str) -> None:
    """Write ``<stem>.owner``: the java executable and interpreter prefix the key was made from."""
    owner = config.SPARK_DRIVER_DIR / f"{stem}.owner"
    text = f"{_java()}\n{sys.prefix}\n"
    if not owner.is_file() or owner.read_text() != text:
        tmp = owner.with_name(f"{owner.name}.{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, owner)


def prune_stale() -> list[str]:
    """Delete the files of every key whose recorded java or interpreter prefix no longer exists;
    the stems deleted. The current key, and keys without an ``.owner`` file, are kept."""
    current = _stem()
    pruned = []
    for owner in sorted(config.SPARK_DRIVER_DIR.glob("spark-*.owner")):
        stem = owner.name[:-len(".owner")]
        try:
            java, prefix = owner.read_text().splitlines()[:2]
        except (OSError, ValueError):
            continue   # unreadable or half-written: not ours to judge
        if stem == current or (Path(java).exists() and Path(prefix).is_dir()):
            continue
        for f in (owner.with_name(f"{stem}.jsa"), owner.with_name(f"{stem}-rules.jar"), owner):
            f.unlink(missing_ok=True)
        pruned.append(stem)
    return pruned


def rules_jar() -> Path | None:
    stem = _stem()
    return None if stem is None else config.SPARK_DRIVER_DIR / f"{stem}-rules.jar"


def archive_path() -> Path | None:
    stem = _stem()
    return None if stem is None else config.SPARK_DRIVER_DIR / f"{stem}.jsa"


def _newer_than(path: Path | None, *sources: Path) -> bool:
    """True when ``path`` exists and is at least as new as every source."""
    try:
        built = path.stat().st_mtime
        return all(built >= s.stat().st_mtime for s in sources)
    except (OSError, AttributeError):
        return False


def _jar_ready(jar: Path | None) -> bool:
    return _newer_than(jar, *SOURCES, *SCALA_SOURCES, _jars_dir())


def _archive_ready(archive: Path | None, jar: Path | None) -> bool:
    return _jar_ready(jar) and _newer_than(archive, jar, _jars_dir())


def session_conf(small: bool = True) -> dict[str, str]:
    """Spark settings for a driver on a local master: the rule jar on its class path (the batcher's
    combined action, :mod:`conformance.pipeline.batch`); for a driver started for a small batch also
    the rule and, when ready (or while training), the class archive. Empty when setup has not
    built the rule jar."""
    jar = rules_jar()
    if not _jar_ready(jar):
        return {}
    conf = {"spark.driver.extraClassPath": str(jar)}
    if not small:
        return conf
    conf["spark.sql.extensions"] = RULES_CLASS
    dump = os.environ.get(DUMP_ENV)
    archive = archive_path()
    if dump:
        conf["spark.driver.extraJavaOptions"] = f"-XX:ArchiveClassesAtExit={dump} {_QUIET}"
    elif _archive_ready(archive, jar):
        conf["spark.driver.extraJavaOptions"] = f"-XX:SharedArchiveFile={archive} {_QUIET}"
    return conf


def ensure_rules_jar() -> Path | None:
    """Compile the rule jar unless a fresh one exists; its path, or None without java/javac."""
    jar, java, javac, jar_tool = rules_jar(), _java(), _java("javac"), _java("jar")
    if jar is None or java is None or javac is None or jar_tool is None:
        return None
    jar.parent.mkdir(parents=True, exist_ok=True)
    _record_owner(jar.name[:-len("-rules.jar")])
    if _jar_ready(jar):
        return jar
    with tempfile.TemporaryDirectory(prefix="rules-", dir=jar.parent) as work:
        classes = Path(work) / "classes"
        built = Path(work) / "rules.jar"
        classes.mkdir()
        steps = {"scalac": [str(java), "-cp", str(_jars_dir() / "*"), "scala.tools.nsc.Main", "-usejavacp", "-nowarn",
                            "-d", str(classes), *map(str, SCALA_SOURCES), *map(str, SOURCES)],
                 "javac": [str(javac), "--release", "17", "-nowarn", "-d", str(classes),
                           "-cp", os.pathsep.join([str(classes), str(_jars_dir() / "*")]), *map(str, SOURCES)],
                 "jar": [str(jar_tool), "cf", str(built), "-C", str(classes), "."]}
        for step, cmd in steps.items():
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                raise SuiteError(f"building the Spark plan rule failed ({step}): "
                                 f"{(done.stderr or done.stdout)[-2000:]}")
        os.replace(built, jar)
    return jar


_TRAIN = """
import sys
from pathlib import Path
from conformance.pipeline import verdicts
from conformance.pipeline.session import get_session, stop_session
from conformance.pipeline.synth import cooperative_story
root = Path(sys.argv[1])
verdicts.judge([cooperative_story(root / "runs", "train")], root / "out")
print("JVM", get_session()._jvm.java.lang.ProcessHandle.current().pid(), flush=True)
stop_session()
"""


def _alive(pid: int) -> bool:
    """True while process ``pid`` runs (a zombie has exited: nobody may reap it here)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2:].split()[0] != "Z"


def ensure_archive(timeout_s: float = 300.0) -> Path | None:
    """Stale keys pruned (:func:`prune_stale`), then the rule jar, then the class archive, unless
    fresh ones exist; the archive's path, or None without java/javac. Raises SuiteError (saying
    why) when a build fails."""
    if config.SPARK_DRIVER_DIR.is_dir():
        prune_stale()
    jar = ensure_rules_jar()
    archive = archive_path()
    if jar is None or archive is None:
        return None
    if _archive_ready(archive, jar):
        return archive
    tmp = archive.with_name(f"{archive.name}.{os.getpid()}.tmp")
    try:
        with tempfile.TemporaryDirectory(prefix="train-", dir=archive.parent) as work:
            done = subprocess.run([sys.executable, "-c", _TRAIN, work], env={**os.environ, DUMP_ENV: str(tmp)},
                                  capture_output=True, text=True, timeout=timeout_s)
        pid = next((int(line.split()[1]) for line in done.stdout.splitlines() if line.startswith("JVM ")), None)
        if done.returncode != 0 or pid is None:
            raise SuiteError(f"building the Spark class archive failed (exit {done.returncode}): "
                             f"{(done.stderr or done.stdout)[-2000:]}")
        deadline = time.monotonic() + timeout_s
        while _alive(pid):   # the JVM writes the archive as it exits
            if time.monotonic() > deadline:
                raise SuiteError(f"the training JVM (pid {pid}) did not exit within {timeout_s:.0f} s")
            time.sleep(0.2)
        if not tmp.is_file() or tmp.stat().st_size == 0:
            raise SuiteError(f"the training JVM (pid {pid}) wrote no class archive at {tmp}")
        os.replace(tmp, archive)
        return archive
    finally:
        tmp.unlink(missing_ok=True)
