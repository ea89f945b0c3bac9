"""The Java member kind: Apache kafka-clients, any release from 2.4.0 on.

One harness source (``clients/java/harness``) is compiled once, against the
oldest API, into ``<JAVA_DIR>/harness-<hash of the source>.jar``; each client
version's jars (kafka-clients, its runtime dependencies and an slf4j-simple
binding matching its slf4j-api) are resolved from Maven Central into
``<JAVA_DIR>/kafka-clients-<V>/``. A member runs as
``java <fast-start flags> -cp harness.jar:kafka-clients-V/* conformance.harness.Main CONFIG``.

Guarantees: :func:`ensure` is idempotent (a present install is not touched,
nothing is fetched) and atomic (built in a temporary directory under
``JAVA_DIR`` and renamed into place, under a file lock so concurrent set-ups do
not race); a version that Maven Central does not have (asked by artifact and
version, :func:`release_exists`), or one older than 2.4.0, is a
:class:`UsageError` naming the versions nearest it.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from conformance import config, registries
from conformance.errors import SuiteError, UsageError
from conformance.members.golden import run
from conformance.members.harness_config import STRATEGIES
from conformance.members.kinds import Feature, ImageRecipe, cache_dir, harness_dir
from conformance.members.known_issues import KnownIssue

KIND = "java"
#: The Java harness's Maven project (one source, compiled once against the oldest API).
HARNESS_SRC: Path = harness_dir(KIND) / "harness"
#: harness-<hash>.jar and kafka-clients-<V>/*.jar.
JAVA_DIR: Path = cache_dir(KIND)
#: JVM flags for a fast start: C1 only, class-data sharing, small serial heap.
JVM_FLAGS: tuple[str, ...] = (
    "-XX:TieredStopAtLevel=1", "-Xshare:auto", "-XX:+UseSerialGC", "-Xms32m", "-Xmx256m",
    "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-Dorg.slf4j.simpleLogger.logFile=System.err",
)
#: slf4j binding used when the resolved slf4j-api is 1.x (2.x resolves slf4j-simple 2.x).
SLF4J_FALLBACK_VERSION: str = "1.7.36"
MAIN_CLASS = "conformance.harness.Main"
MAVEN_GROUP = "org.apache.kafka"
MAVEN_ARTIFACT = "kafka-clients"
#: Where releases come from, for messages.
REGISTRY = f"Maven Central ({MAVEN_GROUP}:{MAVEN_ARTIFACT})"
#: The oldest release the harness runs (KIP-429 listener API, onPartitionsLost), and why.
OLDEST: str = "2.4.0"
OLDEST_WHY: str = f"the Java harness runs kafka-clients {OLDEST} or later (KIP-429 listener API)"

DEFAULT_VERSION = "4.4.0"
#: The longest the member's fetch long-poll waits for records (P1 reads it):
#: Java's ``fetch.max.wait.ms`` default (the harness leaves it).
FETCH_MAX_WAIT_MS: int = 500
#: In docker-compose.yml's default set: the protocol's own client, beside the reference.
IN_COMPOSE_DEFAULT = True
#: kafka-clients releases tested with the harness, the default first.
KNOWN_VERSIONS: tuple[str, ...] = ("4.4.0", "3.9.2", "2.8.2", "2.4.1")
#: What ``setup --all`` installs and CI's contract test runs: the newest, the oldest patch of the
#: oldest minor (2.4.1), and 2.8.1 (tests of the harness).
TEST_VERSIONS: tuple[str, ...] = ("4.4.0", "2.8.1", "2.4.1")
#: The newest patch of every minor from OLDEST on Maven Central (the nightly contract tier).
MINOR_VERSIONS: tuple[str, ...] = (
    "4.4.0", "4.3.1", "4.2.2", "4.1.2", "4.0.2", "3.9.2", "3.8.1", "3.7.2", "3.6.2", "3.5.2", "3.4.1", "3.3.2",
    "3.2.3", "3.1.2", "3.0.2", "2.8.2", "2.7.2", "2.6.3", "2.5.1", "2.4.1")
#: kafka-clients releases whose ConsumerProtocol / assignors write the Java golden vectors
#: (clients/java/golden, run by scripts/regen-golden.sh).
GOLDEN_VERSIONS: tuple[str, ...] = ("2.4.1", "2.8.2", "3.4.1", "3.5.2", "3.9.2", "4.4.0")

_SRC = "kafka-clients' ConsumerConfig and consumer/*Assignor.java of each release"
FEATURES: tuple[Feature, ...] = (
    Feature("assignor:range", None, _SRC),
    Feature("assignor:roundrobin", None, _SRC),
    Feature("assignor:sticky", None, _SRC),
    Feature("assignor:cooperative-sticky", None, "CooperativeStickyAssignor, KIP-429 (2.4.0)"),
    Feature("cooperative", None, "KIP-429 (2.4.0)"),
    Feature("assignor-list", None, _SRC),
    Feature("mix-eager-cooperative", None, "[cooperative-sticky, range] is the documented first upgrade bounce"),
    Feature("static-membership", None, "group.instance.id, KIP-345 (2.3.0)"),
    Feature("consumer-protocol", "3.7.0", "group.protocol=consumer, KIP-848: early access in 3.7-3.9 (brokers "
                                          "configured for it), GA in 4.0.0"),
)

#: Its rows of the known-issues table (conformance.members.known_issues).
KNOWN_ISSUES: tuple[KnownIssue, ...] = (
    KnownIssue("java", "3.0.0", "3.4.1", "R1", "KAFKA-14639 (AbstractStickyAssignor.allSubscriptionsEqual; fixed in "
               "3.4.1 and 3.5.0)",
               "a cooperative-sticky leader ignores the owned partitions of a member that declares an older "
               "generation than the others (it missed a round: its SyncGroup came late) and hands them to another "
               "member in the same round",
               # R1's culprit is the leader; the claim it ignored named a generation below the round's highest.
               evidence=(("declared_below_round", True),)),
    KnownIssue("java", "3.2.0", "3.2.1", "V3", "KAFKA-14024 (ConsumerCoordinator.onJoinPrepare; fixed in 3.2.1)",
               "a cooperative member with auto-commit sends a new asynchronous commit from onJoinPrepare on every "
               "poll and waits for it before joining, so it never sends its JoinGroup; the coordinator drops it at "
               "the rebalance timeout and every other member waits that long",
               # V3's culprit is the member; it kept committing while it owed its JoinGroup.
               evidence=(("kept_committing", True),)),
    # Seen on 4.4.0 only (a hunt, issue #42; earlier releases not tried): frozen past its session timeout, the
    # member's first commit after it resumes is answered UNKNOWN_MEMBER_ID, and the poll() after that still
    # returns the records it had fetched for the partitions it lost, before onPartitionsLost.
    KnownIssue("java", "4.4.0", None, "C2", "docs/client-bugs/java-fenced-commit-poll.md (classic consumer; "
               "no upstream report yet)",
               "after an OffsetCommit is answered UNKNOWN_MEMBER_ID, the next poll() still hands the application "
               "records it had fetched for the partitions it has lost, and calls onPartitionsLost only after",
               # C2's culprit is the member; the fence it ignored was an OffsetCommit answer.
               evidence=(("fence_api", "OffsetCommit"), ("fence_error", "UNKNOWN_MEMBER_ID"))),
)


def version_key(version: str) -> tuple[int, ...]:
    """Numeric sort key of a release version (``2.8.2`` -> ``(2, 8, 2)``); non-numeric parts sort as 0."""
    return tuple(int(p) if p.isdigit() else 0 for p in re.split(r"[.\-]", version))


def known_versions() -> list[str]:
    return list(KNOWN_VERSIONS)


def supports_cooperative(version: str) -> bool:
    return version_key(version) >= version_key(OLDEST)


def strategies_supported(version: str) -> list[str]:
    # CooperativeStickyAssignor arrived in 2.4.0 with KIP-429, the oldest release the harness runs.
    return list(STRATEGIES) if supports_cooperative(version) else ["sticky", "range", "roundrobin"]


def release_exists(version: str) -> bool:
    """Whether Maven Central has kafka-clients ``version`` (its POM); RegistryUnreachable without an answer."""
    return registries.maven_has(MAVEN_GROUP, MAVEN_ARTIFACT, version)


def listed_versions() -> tuple[str, ...]:
    """Every kafka-clients release Maven Central's metadata lists (for naming nearby ones)."""
    return registries.maven_versions(MAVEN_GROUP, MAVEN_ARTIFACT)


def check_version(version: str) -> None:
    """UsageError unless ``version`` is a kafka-clients release the harness can run."""
    from conformance.members.versions import check

    found = check(KIND, version)
    if found:
        raise UsageError(found)


# --------------------------------------------------------------------------- paths


def harness_hash() -> str:
    """Hash of the harness source (pom and every file under src/): names the built jar."""
    src = HARNESS_SRC
    files = [src / "pom.xml", *sorted(p for p in (src / "src").rglob("*") if p.is_file())]
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(src)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def harness_jar() -> Path:
    return JAVA_DIR / f"harness-{harness_hash()}.jar"


def clients_dir(version: str) -> Path:
    return JAVA_DIR / f"kafka-clients-{version}"


def is_installed(version: str) -> bool:
    return harness_jar().is_file() and (clients_dir(version) / f"kafka-clients-{version}.jar").is_file()


# --------------------------------------------------------------------------- install


@contextmanager
def _locked() -> Iterator[None]:
    JAVA_DIR.mkdir(parents=True, exist_ok=True)
    with open(JAVA_DIR / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _mvn(args: list[str], cwd: Path, what: str) -> None:
    argv = ["mvn", "-B", "-q", f"-Dmaven.repo.local={config.MAVEN_REPO}", *args]
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-25:])
        raise SuiteError(f"{what} failed (mvn exit {proc.returncode}, in {cwd}):\n{tail}")


def ensure(version: str) -> None:
    """Install the harness jar and kafka-clients ``version``; idempotent and atomic."""
    if is_installed(version):
        return
    check_version(version)
    with _locked():
        _build_harness()
        _resolve_clients(version)


def _build_harness() -> Path:
    jar = harness_jar()
    if jar.is_file():
        return jar
    with tempfile.TemporaryDirectory(prefix="harness-build-", dir=JAVA_DIR) as tmp:
        work = Path(tmp) / "harness"
        shutil.copytree(HARNESS_SRC, work, ignore=shutil.ignore_patterns("target"))
        _mvn(["package"], work, "building the Java harness")
        staged = Path(tmp) / jar.name
        shutil.copy2(work / "target" / "harness.jar", staged)
        os.replace(staged, jar)
    return jar


_RESOLVE_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>conformance</groupId><artifactId>resolve-kafka-clients</artifactId><version>0</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-clients</artifactId><version>{version}</version></dependency>
  </dependencies>
</project>
"""


def _resolve_clients(version: str) -> Path:
    target = clients_dir(version)
    if (target / f"kafka-clients-{version}.jar").is_file():
        return target
    with tempfile.TemporaryDirectory(prefix=f"kafka-clients-{version}-", dir=JAVA_DIR) as tmp:
        work = Path(tmp)
        (work / "pom.xml").write_text(_RESOLVE_POM.format(version=version), encoding="utf-8")
        lib = work / "lib"
        _mvn(["dependency:copy-dependencies", f"-DoutputDirectory={lib}", "-DincludeScope=runtime"], work,
             f"resolving kafka-clients {version}")
        api = sorted(lib.glob("slf4j-api-*.jar"))
        slf4j = api[0].name[len("slf4j-api-"):-len(".jar")] if api else SLF4J_FALLBACK_VERSION
        extra = [f"org.slf4j:slf4j-simple:{slf4j}"] + ([] if api else [f"org.slf4j:slf4j-api:{slf4j}"])
        for artifact in extra:
            _mvn(["dependency:copy", f"-Dartifact={artifact}", f"-DoutputDirectory={lib}"], work,
                 f"resolving {artifact}")
        if not (lib / f"kafka-clients-{version}.jar").is_file():
            raise SuiteError(f"resolving kafka-clients {version}: no kafka-clients-{version}.jar in {sorted(os.listdir(lib))}")
        if target.exists():
            shutil.rmtree(target)
        os.replace(lib, target)
    return target


# --------------------------------------------------------------------------- run


def classpath(version: str) -> str:
    return f"{harness_jar()}{os.pathsep}{clients_dir(version)}/*"


def command(version: str, config_path: Path) -> tuple[list[str], dict[str, str]]:
    if not is_installed(version):
        raise UsageError(f"java@{version} is not set up; run: conformance setup --clients java@{version}")
    java = shutil.which("java") or "java"
    argv = [java, *JVM_FLAGS, "-cp", classpath(version), MAIN_CLASS, str(config_path)]
    return argv, {}


def image(version: str) -> ImageRecipe:
    """The member image: Java 17 (``java`` on its PATH) with the harness jar and the version's jars
    from the cache."""
    return ImageRecipe("member-java.Dockerfile", cache=(harness_jar(), clients_dir(version)), programs=("java",))


def golden_vectors(version: str, work: Path) -> str:
    """The golden vectors kafka-clients ``version`` writes (:mod:`conformance.members.golden`): the
    generator (``clients/java/golden``, Maven) is compiled against the oldest API (the pom's default
    kafka.version, 2.4.1) and run with ``version``'s jars on the class path."""
    src = harness_dir(KIND) / "golden"
    mvn = ["mvn", "-q", "-B", "-Dstyle.color=never", f"-Dmaven.repo.local={config.MAVEN_REPO}"]
    run([*mvn, "compile"], "compiling the Java golden generator", cwd=src)
    classpath = work / "classpath.txt"
    run([*mvn, "dependency:build-classpath", f"-Dkafka.version={version}", f"-Dmdep.outputFile={classpath}"],
        f"resolving kafka-clients {version}", cwd=src)
    cp = f"{src / 'target' / 'classes'}{os.pathsep}{classpath.read_text(encoding='utf-8').rstrip(chr(10))}"
    return run(["java", "-cp", cp, "conformance.golden.GoldenVectors"], f"the Java {version} golden generator")
