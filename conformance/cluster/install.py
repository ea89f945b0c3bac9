"""Installers for the cluster: the Kafka broker (Maven Central jars) and toxiproxy (Go module).

Guarantees, for both :func:`ensure_broker` and :func:`ensure_toxiproxy`:

- Idempotent: a second call finds the finished install and returns at once,
  printing ``broker X: already installed`` (or the toxiproxy equivalent).
- Atomic: everything is built in a temporary directory next to the final one
  and renamed into place only when complete; a failure removes the temporary
  directory, so the cache never holds a half-written entry. An entry counts as
  installed only when its ``install.json`` marker exists (written last).
- Only the package registries are used: Maven Central through ``mvn`` (local
  repository ``config.MAVEN_REPO``), Go modules through the Go module proxy
  (``GOPATH``/``GOMODCACHE`` under ``config.GO_DIR``).

Broker layout: ``config.BROKERS_DIR/<version>/lib/*.jar``, ``log4j.properties``
(3.x, reload4j) or ``log4j2.properties`` (4.x, log4j2), ``install.json`` with
the logging backend and any substituted artifact.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from conformance import config
from conformance.errors import SuiteError, UsageError

_MARKER = "install.json"
_MISSING_RE = re.compile(r"(?:Could not find artifact ([\w.\-]+):([\w.\-]+):jar:([\w.\-]+)"
                         r"|([\w.\-]+):([\w.\-]+):jar:([\w.\-]+) was not found)")


# ---------------------------------------------------------------------------
# Broker
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class BrokerInstall:
    """A finished broker install: where its jars are and how it logs."""

    version: str
    path: Path
    logging: str                 # "log4j2" (4.x) or "reload4j" (3.x)
    substitutions: dict[str, str]

    @property
    def lib(self) -> Path:
        return self.path / "lib"

    @property
    def log_config(self) -> Path:
        return self.path / ("log4j2.properties" if self.logging == "log4j2" else "log4j.properties")

    def log_jvm_flags(self) -> list[str]:
        """JVM flags that point the broker's logging at this install's config file."""
        if self.logging == "log4j2":
            return [f"-Dlog4j2.configurationFile={self.log_config}"]
        return [f"-Dlog4j.configuration=file:{self.log_config}"]

    @classmethod
    def load(cls, path: Path) -> "BrokerInstall":
        data = json.loads((path / _MARKER).read_text(encoding="utf-8"))
        return cls(data["version"], path, data["logging"], dict(data.get("substitutions", {})))


def broker_install(version: str) -> BrokerInstall | None:
    """The finished install of ``version``, or None if it is not installed."""
    path = config.BROKERS_DIR / version
    if (path / _MARKER).is_file():
        return BrokerInstall.load(path)
    return None


def maven_versions(group: str, artifact: str, timeout: float = 30.0) -> list[str]:
    """The versions Maven Central lists for ``group:artifact`` (its maven-metadata.xml)."""
    url = f"{config.MAVEN_CENTRAL}/{group.replace('.', '/')}/{artifact}/maven-metadata.xml"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            root = ET.fromstring(resp.read())
    except (urllib.error.URLError, OSError, ET.ParseError) as exc:
        raise SuiteError(f"cannot read the versions of {group}:{artifact} from {url}: {exc}") from exc
    return [v.text for v in root.iter("version") if v.text]


def _version_key(v: str) -> tuple:
    return tuple(int(p) if p.isdigit() else -1 for p in re.split(r"[.\-]", v))


def _pom(version: str, excluded: list[tuple[str, str]], extra: list[tuple[str, str, str]]) -> str:
    exclusions = "".join(f"<exclusion><groupId>{g}</groupId><artifactId>{a}</artifactId></exclusion>"
                         for g, a in excluded)
    deps = [f"<dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId>"
            f"<version>{version}</version><exclusions>{exclusions}</exclusions></dependency>"]
    for g, a, v in extra:
        deps.append(f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version>"
                    "<exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion>"
                    "</exclusions></dependency>")
    return ('<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
            "<groupId>conformance</groupId><artifactId>broker-install</artifactId><version>0</version>"
            f"<packaging>pom</packaging><dependencies>{''.join(deps)}</dependencies></project>\n")


def _mvn(workdir: Path, lib: Path) -> subprocess.CompletedProcess[str]:
    argv = ["mvn", "-q", "-B", "dependency:copy-dependencies", "-DincludeScope=runtime",
            f"-DoutputDirectory={lib}", f"-Dmaven.repo.local={config.MAVEN_REPO}"]
    return subprocess.run(argv, cwd=workdir, capture_output=True, text=True, timeout=900)


def _jar_version(lib: Path, artifact: str) -> str | None:
    for jar in lib.glob(f"{artifact}-*.jar"):
        rest = jar.name[len(artifact) + 1:-4]
        if rest and rest[0].isdigit():
            return rest
    return None


_LOG4J_PROPERTIES = """\
# Broker logging (reload4j): everything to stdout (the supervisor writes it to
# logs/broker.log); the controller's own loggers to logs/controller.log.
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.appender.controller=org.apache.log4j.FileAppender
log4j.appender.controller.File=${kafka.logs.dir}/controller.log
log4j.appender.controller.layout=org.apache.log4j.PatternLayout
log4j.appender.controller.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.controller=INFO, controller
log4j.additivity.kafka.controller=false
log4j.logger.org.apache.kafka.controller=INFO, controller
log4j.additivity.org.apache.kafka.controller=false
log4j.logger.org.apache.kafka.raft=INFO, controller
log4j.additivity.org.apache.kafka.raft=false
log4j.logger.state.change.logger=WARN
log4j.logger.kafka.log.LogCleaner=WARN
log4j.logger.org.apache.kafka.storage.internals.log=WARN
"""

_LOG4J2_PROPERTIES = """\
# Broker logging (log4j2): everything to stdout (the supervisor writes it to
# logs/broker.log); the controller's own loggers to logs/controller.log.
name=conformance-broker
appender.stdout.type=Console
appender.stdout.name=STDOUT
appender.stdout.layout.type=PatternLayout
appender.stdout.layout.pattern=[%d] %p %m (%c)%n
appender.controller.type=File
appender.controller.name=CONTROLLER
appender.controller.fileName=${sys:kafka.logs.dir}/controller.log
appender.controller.layout.type=PatternLayout
appender.controller.layout.pattern=[%d] %p %m (%c)%n
rootLogger.level=INFO
rootLogger.appenderRef.stdout.ref=STDOUT
logger.controller.name=org.apache.kafka.controller
logger.controller.level=INFO
logger.controller.additivity=false
logger.controller.appenderRef.c.ref=CONTROLLER
logger.kcontroller.name=kafka.controller
logger.kcontroller.level=INFO
logger.kcontroller.additivity=false
logger.kcontroller.appenderRef.c.ref=CONTROLLER
logger.raft.name=org.apache.kafka.raft
logger.raft.level=INFO
logger.raft.additivity=false
logger.raft.appenderRef.c.ref=CONTROLLER
logger.statechange.name=state.change.logger
logger.statechange.level=WARN
logger.storage.name=org.apache.kafka.storage.internals.log
logger.storage.level=WARN
"""


def ensure_broker(version: str) -> Path:
    """Install broker ``version`` (``org.apache.kafka:kafka_2.13``) and return its directory.

    Raises UsageError (one line, naming the versions Maven Central has) for a
    version that does not exist, SuiteError naming what failed for a failed
    download; neither leaves anything in the cache.
    """
    existing = broker_install(version)
    if existing is not None:
        print(f"broker {version}: already installed ({existing.path})")
        return existing.path
    available = maven_versions("org.apache.kafka", "kafka_2.13")
    if version not in available:
        releases = [v for v in available if re.fullmatch(r"\d+\.\d+\.\d+", v)]
        raise UsageError(f"broker version {version!r} is not on Maven Central (org.apache.kafka:kafka_2.13); "
                         f"it has: {', '.join(sorted(releases, key=_version_key))}")
    started = time.monotonic()
    config.BROKERS_DIR.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{version}-", dir=config.BROKERS_DIR))
    try:
        install = _build_broker(version, tmp)
        final = config.BROKERS_DIR / version
        try:
            os.rename(tmp, final)
        except OSError:
            if broker_install(version) is None:   # not a concurrent install that won the race
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    subs = f" (substituted {install.substitutions})" if install.substitutions else ""
    print(f"broker {version}: installed in {time.monotonic() - started:.1f}s{subs}")
    return config.BROKERS_DIR / version


def _build_broker(version: str, tmp: Path) -> BrokerInstall:
    lib = tmp / "lib"
    work = tmp / "pom"
    work.mkdir()
    excluded: list[tuple[str, str]] = []
    extra: list[tuple[str, str, str]] = []
    substitutions: dict[str, str] = {}
    # Resolve; an org.apache.kafka artifact missing from Central at this exact
    # version (seen: kafka-tools-api 4.4.0) is replaced by its newest earlier
    # release, recorded in install.json. Anything else missing is an error.
    for _ in range(5):
        (work / "pom.xml").write_text(_pom(version, excluded, extra), encoding="utf-8")
        result = _mvn(work, lib)
        if result.returncode == 0:
            break
        output = (result.stdout + result.stderr).strip()
        found = _MISSING_RE.search(output)
        missing = [g for g in found.groups() if g] if found else []
        if len(missing) != 3 or missing[0] != "org.apache.kafka" or missing[1] == "kafka_2.13":
            raise SuiteError(f"broker {version}: Maven could not resolve org.apache.kafka:kafka_2.13:{version} "
                             f"with its runtime dependencies: {_last_error(output)}")
        group, artifact, bad = missing
        earlier = [v for v in maven_versions(group, artifact)
                   if re.fullmatch(r"\d+\.\d+\.\d+", v) and _version_key(v) < _version_key(bad)]
        if not earlier:
            raise SuiteError(f"broker {version}: {group}:{artifact}:{bad} is missing from Maven Central "
                             "and no earlier release exists to substitute")
        sub = max(earlier, key=_version_key)
        excluded.append((group, artifact))
        extra.append((group, artifact, sub))
        substitutions[f"{group}:{artifact}"] = f"{bad} -> {sub}"
        shutil.rmtree(lib, ignore_errors=True)
    else:
        raise SuiteError(f"broker {version}: too many missing artifacts ({substitutions})")

    # The broker's POM declares only slf4j-api; add the backend its distribution ships.
    log4j_core = _jar_version(lib, "log4j-core")
    slf4j = _jar_version(lib, "slf4j-api") or "1.7.36"
    if log4j_core:
        logging = "log4j2"
        bridge = "log4j-slf4j2-impl" if slf4j.startswith("2.") else "log4j-slf4j-impl"
        extra.append(("org.apache.logging.log4j", bridge, log4j_core))
    else:
        logging = "reload4j"
        extra.append(("ch.qos.reload4j", "reload4j", config.RELOAD4J_VERSION))
        extra.append(("org.slf4j", "slf4j-reload4j", slf4j))
    (work / "pom.xml").write_text(_pom(version, excluded, extra), encoding="utf-8")
    result = _mvn(work, lib)
    if result.returncode != 0:
        raise SuiteError(f"broker {version}: Maven could not fetch the logging backend "
                         f"{[e[:2] for e in extra]}: {_last_error(result.stdout + result.stderr)}")
    if not (lib / f"kafka_2.13-{version}.jar").is_file():
        raise SuiteError(f"broker {version}: resolution finished but kafka_2.13-{version}.jar is not in {lib}")
    shutil.rmtree(work)
    if logging == "log4j2":
        (tmp / "log4j2.properties").write_text(_LOG4J2_PROPERTIES, encoding="utf-8")
    else:
        (tmp / "log4j.properties").write_text(_LOG4J_PROPERTIES, encoding="utf-8")
    (tmp / _MARKER).write_text(json.dumps({"version": version, "logging": logging,
                                           "substitutions": substitutions,
                                           "jars": sorted(p.name for p in lib.glob("*.jar"))}, indent=2) + "\n",
                               encoding="utf-8")
    return BrokerInstall(version, tmp, logging, substitutions)


def _last_error(output: str) -> str:
    lines = [ln.strip() for ln in output.splitlines() if "[ERROR]" in ln and ln.strip() != "[ERROR]"]
    text = lines[0] if lines else (output.splitlines()[-1] if output else "no output")
    return re.sub(r"\x1b\[[0-9;]*m", "", text)[:500]


# ---------------------------------------------------------------------------
# toxiproxy
# ---------------------------------------------------------------------------

def toxiproxy_binary(version: str | None = None) -> Path:
    return config.TOXIPROXY_DIR / (version or config.TOXIPROXY_VERSION) / "toxiproxy-server"


def ensure_toxiproxy(version: str | None = None) -> Path:
    """Build ``toxiproxy-server`` (``config.TOXIPROXY_MODULE``) and return the binary's path.

    Built by :func:`conformance.go_install.go_install` (``go install MODULE/cmd/server@VERSION``
    through the Go module proxy) into ``config.TOXIPROXY_DIR/<version>/``.
    """
    from conformance.go_install import go_install

    version = version or config.TOXIPROXY_VERSION
    return go_install("toxiproxy", config.TOXIPROXY_MODULE, "cmd/server", version, config.TOXIPROXY_DIR / version,
                      "toxiproxy-server")
