"""The suite's images, built from ``docker/*.Dockerfile`` and the processes path's cache.

THE IMAGE CONTRACT (names and layouts are stable; the container backend relies on them)
=====================================================================================

Names (``ensure_images`` returns ``{part: image name}`` for what it made sure of)::

    conformance-base:bookworm               the base where no registry answers (mmdebstrap + docker import)
    conformance-broker:<kafka version>      e.g. conformance-broker:4.4.0
    conformance-toxiproxy:<version>         e.g. conformance-toxiproxy:v2.12.0
    conformance-member-<kind>:<version>     every kind whose module has an image recipe (``image``)
    conformance-tools:<suite version>       the suite itself: producer, wire tap, reference

Every image carries the labels ``io.conformance.suite=1`` and ``io.conformance.inputs=<hash>``
(a hash of its Dockerfile, its whole build context and its build arguments: an image whose
inputs did not change is not rebuilt). Containers, networks and volumes a run makes must carry
:func:`conformance.containers.engine.run_labels` (``io.conformance.suite=1`` and the run's
owner) so that :func:`~conformance.containers.engine.remove_leftovers` can find them.

Base: every Dockerfile says ``ARG BASE=debian:bookworm-slim`` and ``FROM ${BASE}``.
:func:`base_image` picks ``$CONFORMANCE_BASE`` when set, else ``debian:bookworm-slim`` when the
engine has it, else ``conformance-base:bookworm`` when it is there and up to date, else the public
base when the engine can pull it, else builds ``conformance-base:bookworm`` (Debian minbase plus
ca-certificates, the host's extra CA certificates trusted, default command ``/bin/bash``).
Each image also trusts the host's extra CA certificates itself (its context's ``ca/``).

Layout inside the images (paths of the processes path, mapped)::

    /cache            = the host's cache (config.CACHE_DIR); CONFORMANCE_CACHE=/cache is set
    /opt/conformance  = the repository root (the ``conformance`` package, ``clients/``)
    /opt/venv         = the suite's Python environment (python3 and the suite's kafka-python)

Broker image ``conformance-broker:<v>``
    Java 17 and ``/opt/kafka/lib/*.jar`` (the cache's jars of that version).
    Entrypoint ``/opt/kafka/start``: writes ``/opt/kafka/server.properties`` from
    ``/opt/kafka/default.properties`` (this suite's single-node KRaft settings from
    :func:`conformance.cluster.broker.broker_properties`, ports: CONTROLLER 9093, DIRECT 9092,
    listeners bound on every interface, advertised ``DIRECT://$(hostname):9092``) followed by the
    lines of ``$KAFKA_PROPERTIES`` (``key=value`` per line; a later key wins, so this overrides
    listeners, advertised listeners, extra SLOT listeners ...); formats ``/var/lib/kafka/data``
    with ``$CLUSTER_ID`` (default a fixed id; ``--ignore-formatted``, so a restarted container
    keeps its data) and execs ``java ... kafka.Kafka``. Logs go to stdout.
    ``/opt/kafka/ready`` exits 0 only when the broker answers an ApiVersions request on
    ``127.0.0.1:${READY_PORT:-9092}`` (a real Kafka response, not an open port); the image's
    HEALTHCHECK runs it every second.

Toxiproxy image ``conformance-toxiproxy:<v>``
    Entrypoint ``toxiproxy-server -host 0.0.0.0 -port 8474``; extra arguments are appended
    (e.g. ``-config /etc/toxiproxy.json`` to create proxies at start). HEALTHCHECK: its API
    answers ``GET /version``.

Member images ``conformance-member-<kind>:<v>``
    Entrypoint ``/opt/member/run CONFIG_JSON``: exactly the argv and environment of the kind's
    ``command(version, config_path)`` on the processes path, with host paths mapped as above
    (the file ``/opt/member/run`` shows the command). The config is the harness contract's JSON
    (:mod:`conformance.members.harness_config`); its ``history_path`` must be a path the container
    can write (mount the run directory). Run with ``--init`` (``init: true``): the harness gets
    SIGTERM as on the processes path. What goes in comes from the kind's module
    (:class:`conformance.members.kinds.ImageRecipe`: the Dockerfile, cache paths, pip requirement);
    a version its recipe refuses (librdkafka 1.x: no wheel for the image's Python 3.11) is a
    UsageError.

Tools image ``conformance-tools:<suite version>``
    ``/opt/venv/bin/python`` with the suite on ``PYTHONPATH``, working directory
    ``/opt/conformance``; no entrypoint, so ``docker run IMAGE python -m conformance.members.producer
    CONFIG`` runs the producer, ``python -m conformance.reference CONFIG`` the reference.

Guarantees of :func:`ensure_images`: one builder at a time (a file lock); idempotent (unchanged inputs: no build, a few seconds of
hashing); the member versions must be installed in the cache first (set-up does that: it calls
``ensure_client`` and ``ensure_broker`` before building); a failed build raises
:class:`SuiteError` with the end of the build log and leaves the previous image in place; an
image of ours that a rebuild left untagged is removed unless a container still uses it.
Build contexts are staged under ``<repository>/.docker-context/<part>/`` (git-ignored, files
hard-linked from the cache where possible), so ``docker-compose build`` can use them too.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Iterable

from conformance import config
from conformance.containers.engine import LABEL_SUITE, _apt_install
from conformance.errors import SuiteError, UsageError
from conformance.members.spec import MemberSpec

if TYPE_CHECKING:
    import docker

LABEL_INPUTS = "io.conformance.inputs"
PUBLIC_BASE = "debian:bookworm-slim"
LOCAL_BASE = "conformance-base:bookworm"
DOCKER_DIR: Path = config.REPO_ROOT / "docker"
CONTEXTS_DIR: Path = config.REPO_ROOT / ".docker-context"
IMAGE_CACHE = PurePosixPath("/cache")
IMAGE_REPO = PurePosixPath("/opt/conformance")
IMAGE_PYTHON = "/opt/venv/bin/python"
HOST_CA_DIR = Path("/usr/local/share/ca-certificates")
#: Bumped when the staging below changes in a way the hashed inputs would not show.
FORMAT = "1"
#: Apt sources of the local base (Debian's mirror is reachable where registries are not).
DEBIAN_SOURCES = ("deb http://deb.debian.org/debian bookworm main",
                  "deb http://deb.debian.org/debian bookworm-updates main",
                  "deb http://deb.debian.org/debian-security bookworm-security main")


def suite_version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("conformance")
    except PackageNotFoundError:
        return "0.1.0"


@dataclass
class Part:
    """One image to build: its Dockerfile and what its build context holds (BASE is the one build
    argument, the same for every part)."""

    key: str                      # "broker", "toxiproxy", "member-java", "tools"
    image: str                    # repository:tag
    dockerfile: str               # file name under docker/
    files: dict[str, Path] = field(default_factory=dict)   # context path -> host file or directory
    texts: dict[str, str] = field(default_factory=dict)    # context path -> generated text
    executable: tuple[str, ...] = ()                      # generated texts to mark executable

    @property
    def context_dir(self) -> Path:
        return CONTEXTS_DIR / context_name(self.image)


def context_name(image: str) -> str:
    """The directory under ``.docker-context/`` where ``image``'s build context is staged
    (``conformance-member-java:4.4.0`` -> ``member-java-4.4.0``)."""
    return image.replace(":", "-").removeprefix("conformance-")


# --------------------------------------------------------------------------- hashing and staging


def _file_digest(path: Path, digest: "hashlib._Hash") -> None:
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)


def _walk(src: Path) -> Iterable[tuple[str, Path]]:
    """(relative path, file) under ``src`` (or ``src`` itself), sorted; caches and bytecode skipped."""
    if src.is_file():
        yield "", src
        return
    for path in sorted(src.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            yield str(path.relative_to(src)), path


def inputs_hash(part: Part, base: str) -> str:
    """The hash labelled on the image: Dockerfile, every context file, generated texts, the host's
    extra CA certificates, BASE."""
    d = hashlib.sha256(f"format {FORMAT}\0base {base}\0".encode())
    d.update((DOCKER_DIR / part.dockerfile).read_bytes())
    for name, src in sorted(part.files.items()):
        for rel, path in _walk(src):
            d.update(f"\0file {name}/{rel}\0".encode())
            _file_digest(path, d)
    for name, text in sorted(part.texts.items()):
        d.update(f"\0text {name}\0{text}".encode())
    for crt in _host_cas():
        d.update(f"\0ca {crt.name}\0".encode() + crt.read_bytes())
    return d.hexdigest()[:24]


def _host_cas() -> list[Path]:
    """The host's extra CA certificates (Debian's local CA directory), which every image trusts."""
    return sorted(HOST_CA_DIR.glob("*.crt")) if HOST_CA_DIR.is_dir() else []


def _link_or_copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def stage(part: Part) -> Path:
    """Write ``part``'s build context to its directory (replacing an old one) and return it."""
    target = part.context_dir
    CONTEXTS_DIR.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=CONTEXTS_DIR))
    try:
        shutil.copy2(DOCKER_DIR / part.dockerfile, tmp / "Dockerfile")
        (tmp / "ca").mkdir()
        (tmp / "ca" / "README").write_text("Extra CA certificates (*.crt) the image trusts: the host's.\n")
        for crt in _host_cas():
            shutil.copy2(crt, tmp / "ca" / crt.name)
        for name, src in part.files.items():
            for rel, path in _walk(src):
                _link_or_copy(path, tmp / name / rel if rel else tmp / name)
        for name, text in part.texts.items():
            out = tmp / name
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(text, encoding="utf-8")
            if name in part.executable:
                out.chmod(0o755)
        shutil.rmtree(target, ignore_errors=True)
        os.rename(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


# --------------------------------------------------------------------------- the parts


def in_image(arg: str, programs: Iterable[str] = ()) -> str:
    """A host path of the processes path's command as the same path inside the images; the host's
    path of one of ``programs`` (found on PATH) is that program's name (on the image's PATH)."""
    if arg == sys.executable:
        return IMAGE_PYTHON
    for program in programs:
        found = shutil.which(program)
        if found and arg == found:
            return program
    for host, inside in ((config.CACHE_DIR, IMAGE_CACHE), (config.REPO_ROOT, IMAGE_REPO)):
        host_s = str(host)
        if arg == host_s or arg.startswith(host_s + "/") or arg.startswith(host_s + os.pathsep):
            arg = str(inside) + arg[len(host_s):]
        arg = arg.replace(os.pathsep + host_s + "/", os.pathsep + str(inside) + "/")
    return arg


def _shell_quote(s: str) -> str:
    return "'" + s.replace("'", "'\\''") + "'"


def member_run_script(spec: MemberSpec) -> str:
    """``/opt/member/run``: the kind's ``command()`` with paths mapped into the image (and the
    programs its image recipe names as on the image's PATH)."""
    from conformance.members.kinds import image_recipe, kind_module

    marker = "/conformance-config-placeholder.json"
    argv, env = kind_module(spec.kind).command(spec.version, Path(marker))
    if argv[-1] != marker:
        raise SuiteError(f"{spec.kind}: its command does not end with the config path: {argv}")
    recipe = image_recipe(spec.kind, spec.version)
    programs = recipe.programs if recipe is not None else ()
    lines = ["#!/bin/sh", f"# The processes path's command of {spec.kind}@{spec.version}, paths mapped into the image.",
             'if [ "$#" -ne 1 ]; then echo "usage: run CONFIG_JSON" >&2; exit 2; fi']
    lines += [f"export {k}={_shell_quote(in_image(v, programs))}" for k, v in sorted(env.items())]
    lines.append("exec " + " ".join(_shell_quote(in_image(a, programs)) for a in argv[:-1]) + ' "$1"')
    return "\n".join(lines) + "\n"


def _suite_files() -> dict[str, Path]:
    return {"suite/conformance": config.REPO_ROOT / "conformance", "suite/clients": config.CLIENTS_DIR,
            "suite/pyproject.toml": config.REPO_ROOT / "pyproject.toml"}


def _suite_requirement() -> str:
    """The suite's pinned kafka-python (what the producer, the tap and the reference use)."""
    text = (config.REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    m = re.search(r'"(kafka-python==[^"]+)"', text)
    if not m:
        raise SuiteError("pyproject.toml pins no kafka-python==VERSION")
    return m.group(1)


def broker_part(version: str) -> Part:
    from conformance.cluster.broker import broker_properties
    from conformance.cluster.install import broker_install

    inst = broker_install(version)
    if inst is None:
        raise SuiteError(f"broker {version} is not in the cache; run: conformance setup --broker {version}")
    props = broker_properties(version, data_dir=Path("/var/lib/kafka/data"), controller_port=9093,
                              direct_port=9092, slot_ports=[], advertised_ports=[])
    props["controller.quorum.voters"] = "1@127.0.0.1:9093"
    props["listeners"] = "CONTROLLER://127.0.0.1:9093,DIRECT://0.0.0.0:9092"
    props["advertised.listeners"] = "DIRECT://HOSTNAME:9092"
    lines = [f"{k}={v}" for k, v in props.items()]
    return Part("broker", f"conformance-broker:{version}", "broker.Dockerfile",
                files={"kafka/lib": inst.lib, f"kafka/{inst.log_config.name}": inst.log_config,
                       "kafka/start": DOCKER_DIR / "broker-start.sh", "kafka/ready": DOCKER_DIR / "broker-ready.sh"},
                texts={"kafka/default.properties": "\n".join(lines) + "\n"})


def toxiproxy_part(version: str = config.TOXIPROXY_VERSION) -> Part:
    from conformance.cluster.install import toxiproxy_binary

    binary = toxiproxy_binary(version)
    if not binary.is_file():
        raise SuiteError(f"toxiproxy {version} is not in the cache; run: conformance setup")
    return Part("toxiproxy", f"conformance-toxiproxy:{version}", "toxiproxy.Dockerfile",
                files={"toxiproxy-server": binary})


def member_part(spec: MemberSpec) -> Part:
    """The image of ``spec``'s kind and version, as its kind module's recipe says
    (:class:`conformance.members.kinds.ImageRecipe`): the Dockerfile, the cache paths in its context,
    the suite's sources and the client's pip requirement where it has them."""
    from conformance.members.kinds import image_recipe

    kind, version = spec.kind, spec.version
    files: dict[str, Path] = {}
    texts = {"member/run": member_run_script(spec)}
    recipe = image_recipe(kind, version)
    if recipe is None:
        raise UsageError(f"no image for member kind {kind!r}")
    if recipe.refused:
        raise UsageError(f"{kind}@{version}: {recipe.refused}")
    for path in recipe.cache:
        files[f"cache/{path.relative_to(config.CACHE_DIR)}"] = path
    if recipe.suite:
        files.update(_suite_files())
    if recipe.requirement:
        texts["member/requirement"] = recipe.requirement + "\n"
    if recipe.venv:
        texts["member/venv"] = in_image(str(recipe.venv)) + "\n"
    if recipe.suite:
        texts["suite/requirement"] = _suite_requirement() + "\n"
    for _name, src in files.items():
        if not src.exists():
            raise SuiteError(f"{kind}@{version}: {src} is not in the cache; run: conformance setup --clients {spec}")
    return Part(f"member-{kind}", f"conformance-member-{kind}:{version}", recipe.dockerfile, files=files,
                texts=texts, executable=("member/run",))


def has_image(spec: MemberSpec) -> bool:
    """Whether ``spec``'s kind and version have a member image (a recipe that does not refuse it)."""
    from conformance.members.kinds import image_recipe

    recipe = image_recipe(spec.kind, spec.version)
    return recipe is not None and recipe.refused is None


def tools_part() -> Part:
    return Part("tools", f"conformance-tools:{suite_version()}", "tools.Dockerfile", files=_suite_files(),
                texts={"suite/requirement": _suite_requirement() + "\n"})


# --------------------------------------------------------------------------- base


def _image_labels(client: "docker.DockerClient", name: str) -> dict[str, str] | None:
    import docker.errors
    try:
        return client.images.get(name).labels or {}
    except docker.errors.ImageNotFound:
        return None


def base_inputs_hash() -> str:
    d = hashlib.sha256(f"format {FORMAT}\0".encode())
    d.update("\n".join(DEBIAN_SOURCES).encode())
    for crt in _host_cas():
        d.update(crt.name.encode() + b"\0" + crt.read_bytes())
    return d.hexdigest()[:24]


def base_image(client: "docker.DockerClient") -> str:
    """The BASE build argument: $CONFORMANCE_BASE, else the public base if present or pullable,
    else the local base (built when missing or out of date)."""
    if os.environ.get("CONFORMANCE_BASE"):
        return os.environ["CONFORMANCE_BASE"]
    if _image_labels(client, PUBLIC_BASE) is not None:
        return PUBLIC_BASE
    if (_image_labels(client, LOCAL_BASE) or {}).get(LABEL_INPUTS) == base_inputs_hash():
        return LOCAL_BASE   # built before because no registry answered: keep it (no pull attempt)
    try:
        client.images.pull(PUBLIC_BASE)
        return PUBLIC_BASE
    except Exception:  # no registry answers: build the base from Debian's packages
        pass
    ensure_local_base(client)
    return LOCAL_BASE


def ensure_local_base(client: "docker.DockerClient") -> str:
    """``conformance-base:bookworm`` from Debian's packages (mmdebstrap minbase + ca-certificates)."""
    wanted = base_inputs_hash()
    if (_image_labels(client, LOCAL_BASE) or {}).get(LABEL_INPUTS) == wanted:
        return LOCAL_BASE
    if shutil.which("mmdebstrap") is None:
        if os.geteuid() != 0:
            raise SuiteError("building the base image needs mmdebstrap (apt-get install mmdebstrap, as root)")
        _apt_install(["mmdebstrap"])
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="conformance-base-") as tmp:
        tar = Path(tmp) / "rootfs.tar"
        hooks = ['mkdir -p "$1/usr/share/man/man1"']   # openjdk's postinst needs it in a minbase
        cas = _host_cas()
        if cas:
            hooks.append(f'cp {" ".join(_shell_quote(str(c)) for c in cas)} "$1/usr/local/share/ca-certificates/"')
            hooks.append('chroot "$1" update-ca-certificates')
        argv = ["mmdebstrap", "--variant=minbase", "--include=ca-certificates", "--format=tar",
                "--aptopt=Acquire::Check-Valid-Until \"false\"", "--aptopt=Acquire::Check-Date \"false\"",
                "--dpkgopt=path-exclude=/usr/share/doc/*", "--dpkgopt=path-include=/usr/share/doc/*/copyright",
                *(f"--customize-hook={h}" for h in hooks), "bookworm", str(tar), *DEBIAN_SOURCES]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=1200)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-20:])
            raise SuiteError(f"mmdebstrap failed (exit {proc.returncode}):\n{tail}")
        changes = ['CMD ["/bin/bash"]', f"LABEL {LABEL_SUITE}=1", f"LABEL {LABEL_INPUTS}={wanted}",
                   "ENV LANG=C.UTF-8"]
        repo, tag = LOCAL_BASE.split(":")
        client.api.import_image_from_file(str(tar), repository=repo, tag=tag, changes=changes)
    if (_image_labels(client, LOCAL_BASE) or {}).get(LABEL_INPUTS) != wanted:
        raise SuiteError(f"docker import did not produce {LOCAL_BASE}")
    print(f"images: {LOCAL_BASE} built from Debian's packages in {time.monotonic() - started:.1f}s")
    return LOCAL_BASE


# --------------------------------------------------------------------------- building


def build(client: "docker.DockerClient", part: Part, base: str) -> str:
    """Build ``part`` unless an image with the same inputs exists; returns the image name."""
    import docker.errors

    wanted = inputs_hash(part, base)
    marker = part.context_dir / ".inputs"
    staged = marker.is_file() and marker.read_text().strip() == wanted
    if not staged:   # docker-compose needs the contexts even when it has the images
        stage(part)
        marker.write_text(wanted + "\n")
    if (_image_labels(client, part.image) or {}).get(LABEL_INPUTS) == wanted:
        print(f"images: {part.image}: up to date")
        return part.image
    started = time.monotonic()
    context = part.context_dir
    log: list[str] = []
    try:
        for chunk in client.api.build(path=str(context), tag=part.image, buildargs={"BASE": base}, rm=True,
                                      forcerm=True, decode=True, labels={LABEL_SUITE: "1", LABEL_INPUTS: wanted}):
            if "stream" in chunk:
                log.extend(chunk["stream"].splitlines())
            if "error" in chunk:
                tail = "\n".join(log[-25:] + [chunk["error"]])
                raise SuiteError(f"building {part.image} failed (context {context}):\n{tail}")
    except docker.errors.APIError as exc:
        raise SuiteError(f"building {part.image} failed: {exc}") from None
    print(f"images: {part.image}: built in {time.monotonic() - started:.1f}s")
    return part.image


def parts_for(broker_versions: Iterable[str], member_specs: Iterable[MemberSpec]) -> list[Part]:
    """Every part a run of these brokers and members needs (toxiproxy and tools always)."""
    parts = [broker_part(v) for v in dict.fromkeys(broker_versions)]
    parts.append(toxiproxy_part())
    for spec in dict.fromkeys(MemberSpec(s.kind, s.version) for s in member_specs):
        parts.append(member_part(spec))
    parts.append(tools_part())
    return parts


def ensure_images(broker_versions: Iterable[str], member_specs: Iterable[MemberSpec],
                  client: "docker.DockerClient | None" = None) -> dict[str, str]:
    """Build (or find up to date) every image these brokers and members need; returns
    ``{part key: image}`` with keys ``base``, ``broker:<v>``, ``toxiproxy``, ``member:<kind>@<v>``
    and ``tools``. See the module for the guarantees."""
    from conformance.containers.engine import ensure_engine

    client = client or ensure_engine()
    broker_versions = list(broker_versions)
    member_specs = list(member_specs)
    parts = parts_for(broker_versions, member_specs)   # checks the cache before any build
    CONTEXTS_DIR.mkdir(parents=True, exist_ok=True)
    with open(CONTEXTS_DIR / ".lock", "w") as lock:   # one builder at a time: contexts are replaced
        fcntl.flock(lock, fcntl.LOCK_EX)
        base = base_image(client)
        out = {"base": base}
        for part in parts:
            key = part.key
            if part.key == "broker":
                key = f"broker:{part.image.split(':', 1)[1]}"
            elif part.key.startswith("member-"):
                key = f"member:{part.key.removeprefix('member-')}@{part.image.split(':', 1)[1]}"
            out[key] = build(client, part, base)
        # An image replaced by a rebuild is left untagged: remove ours that no container uses.
        client.images.prune(filters={"dangling": True, "label": f"{LABEL_SUITE}=1"})
    return out
