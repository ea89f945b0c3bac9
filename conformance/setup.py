"""``conformance setup``: install everything a run needs into the cache, idempotently.

Guarantees: a second call with the same arguments does nothing and says so
quickly; a failed download or build says what failed and leaves no
half-written cache entry (installers build into a temporary directory and
rename it into place); nothing is fetched from outside the package registries.

It says what it does (:class:`Steps`): one line as each install step starts and one when it ends,
with its time, a line every :data:`TICK_S` seconds while a step runs on, and the total at the end.
"""

from __future__ import annotations

import argparse
import shutil
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import TypeVar

from conformance import config
from conformance.members import kinds
from conformance.members.spec import MemberSpec, parse_specs
from conformance.members.versions import check_specs

T = TypeVar("T")

#: Seconds a running step may stay silent before setup says it still runs.
TICK_S: float = 5.0


class Steps:
    """The numbered install steps of one set-up, each announced as it starts and when it ends.

    Guarantee: :meth:`run` prints ``setup: [i/n] WHAT ...`` before the step, ``setup: [i/n] WHAT:
    done in S.Ss`` after it (``failed after S.Ss: ERROR`` when it raises, which it re-raises), and
    ``setup: [i/n] WHAT: still running (S s)`` every :data:`TICK_S` seconds between, so set-up is
    never silent for longer; all on stdout, flushed at once."""

    def __init__(self, total: int, tick_s: float = TICK_S) -> None:
        self.total = total
        self.done = 0
        self.tick_s = tick_s

    def run(self, what: str, action: Callable[[], T]) -> T:
        self.done += 1
        label = f"setup: [{self.done}/{self.total}] {what}"
        _say(f"{label} ...")
        started = time.monotonic()
        stop = threading.Event()

        def tick() -> None:
            while not stop.wait(self.tick_s):
                _say(f"{label}: still running ({time.monotonic() - started:.0f} s)")

        ticker = threading.Thread(target=tick, name="setup-tick", daemon=True)
        ticker.start()
        try:
            result = action()
        except BaseException as exc:
            stop.set()
            ticker.join()
            _say(f"{label}: failed after {time.monotonic() - started:.1f}s: {type(exc).__name__}")
            raise
        stop.set()
        ticker.join()
        _say(f"{label}: done in {time.monotonic() - started:.1f}s")
        return result


def _say(line: str) -> None:
    print(line, flush=True)


#: Where runs can happen: local processes, or containers on a Docker engine.
BACKENDS: tuple[str, ...] = ("processes", "docker")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("setup", help="install brokers, toxiproxy and client builds into the cache (idempotent)")
    p.add_argument("--broker", action="append", metavar="VERSION",
                   help=f"broker version to install (repeatable; default {config.DEFAULT_BROKER})")
    p.add_argument("--clients", metavar="SPEC,...", help="member specs to prepare (default: the default mix)")
    p.add_argument("--all", action="store_true", help="the brokers, every client version and the tools the tests use (actionlint lints the "
                        "workflows); other supported brokers install when a run first needs them")
    p.add_argument("--backend", choices=BACKENDS, default="processes",
                   help="processes (default): the cache only; docker: also a Docker engine (installed and "
                        "started as root when none answers) and the images of the default brokers and mix")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from conformance.cluster import install as cluster_install
    from conformance.members import install as member_install

    if args.all:
        brokers = list(config.TESTED_BROKERS)
        specs = [MemberSpec.parse(s) for s in (*kinds.default_mix(), *kinds.setup_all_specs())]
    else:
        brokers = args.broker or [config.DEFAULT_BROKER]
        specs = parse_specs(args.clients) if args.clients is not None else [MemberSpec.parse(s) for s in kinds.default_mix()]
    started = time.monotonic()
    # Clients first: a version that does not exist is the likeliest mistake, and
    # it should be reported before minutes of broker downloads (one line, the closest versions).
    check_specs(specs)
    clients = list(dict.fromkeys(MemberSpec(s.kind, s.version) for s in specs))
    brokers = list(dict.fromkeys(brokers))
    docker = args.backend == "docker"
    steps = Steps(len(clients) + len(brokers) + 1 + bool(args.all) + (4 if docker else 0))
    for spec in clients:
        steps.run(f"client {spec.kind} {spec.version}", partial(member_install.ensure_client, spec))
    for version in brokers:
        steps.run(f"broker {version}", partial(cluster_install.ensure_broker, version))
    steps.run(f"toxiproxy {config.TOXIPROXY_VERSION}", cluster_install.ensure_toxiproxy)
    if args.all:  # a tool of the project's tests (tests/test_workflows.py), not of runs
        from conformance.actionlint import ensure_actionlint
        steps.run(f"actionlint {config.ACTIONLINT_VERSION}", ensure_actionlint)
    if docker:
        # Images for what was asked; with --all or nothing asked, the default broker and mix only
        # (each image costs build time; a run builds any other image it needs).
        explicit = not args.all and (args.broker or args.clients is not None)
        _setup_docker(steps, brokers if explicit else [config.DEFAULT_BROKER],
                      specs if explicit else [MemberSpec.parse(s) for s in kinds.default_mix()])
    # Earlier versions built a Spark driver jar and class archive (~170 MB each) here; nothing uses them now.
    shutil.rmtree(config.CACHE_DIR / "spark-driver", ignore_errors=True)
    _say(f"setup: ready in {time.monotonic() - started:.1f}s ({steps.total} steps; cache: {config.CACHE_DIR})")
    return 0


def _setup_docker(steps: Steps, brokers: list[str], specs: list[MemberSpec]) -> None:
    """An answering engine, no leftovers of dead runs, and the images of these brokers and members
    (built from the cache just filled; a version whose kind's image recipe refuses it gets none).
    Four of ``steps``."""
    from conformance.containers.engine import ensure_compose, ensure_engine, remove_leftovers
    from conformance.containers.images import ensure_images, has_image

    client = steps.run("docker engine", ensure_engine)
    steps.run("docker compose", ensure_compose)
    removed = steps.run("docker: leftovers of dead runs", lambda: remove_leftovers(client))
    if any(removed.values()):
        _say(f"setup: removed what dead runs left: {removed}")
    images = [s for s in specs if has_image(s)]
    built = steps.run(f"docker images ({len(brokers)} broker(s), {len(images)} member(s))",
                      lambda: ensure_images(brokers, images, client=client))
    _say(f"setup: {len(built)} docker images ready")
