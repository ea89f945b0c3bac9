"""``conformance setup``: install everything a run needs into the cache, idempotently.

Guarantees: a second call with the same arguments does nothing and says so
quickly; a failed download or build says what failed and leaves no
half-written cache entry (installers build into a temporary directory and
rename it into place); nothing is fetched from outside the package registries.
"""

from __future__ import annotations

import argparse
import shutil
import time

from conformance import config
from conformance.members.spec import MemberSpec, parse_specs
from conformance.members.versions import check_specs

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
        specs = [MemberSpec.parse(s) for s in (*config.DEFAULT_MIX, *config.TEST_CLIENTS)]
    else:
        brokers = args.broker or [config.DEFAULT_BROKER]
        specs = parse_specs(args.clients) if args.clients is not None else [MemberSpec.parse(s) for s in config.DEFAULT_MIX]
    started = time.monotonic()
    # Clients first: a version that does not exist is the likeliest mistake, and
    # it should be reported before minutes of broker downloads (one line, the closest versions).
    check_specs(specs)
    for spec in dict.fromkeys(MemberSpec(s.kind, s.version) for s in specs):
        member_install.ensure_client(spec)
    for version in dict.fromkeys(brokers):
        cluster_install.ensure_broker(version)
    cluster_install.ensure_toxiproxy()
    if args.all:  # a tool of the project's tests (tests/test_workflows.py), not of runs
        from conformance.actionlint import ensure_actionlint
        ensure_actionlint()
    if args.backend == "docker":
        # Images for what was asked; with --all or nothing asked, the default broker and mix only
        # (each image costs build time; a run builds any other image it needs).
        explicit = not args.all and (args.broker or args.clients is not None)
        _setup_docker(brokers if explicit else [config.DEFAULT_BROKER],
                      specs if explicit else [MemberSpec.parse(s) for s in config.DEFAULT_MIX])
    # Earlier versions built a Spark driver jar and class archive (~170 MB each) here; nothing uses them now.
    shutil.rmtree(config.CACHE_DIR / "spark-driver", ignore_errors=True)
    print(f"setup: ready in {time.monotonic() - started:.1f}s (cache: {config.CACHE_DIR})")
    return 0


def _setup_docker(brokers: list[str], specs: list[MemberSpec]) -> None:
    """An answering engine, no leftovers of dead runs, and the images of these brokers and members
    (built from the cache just filled; librdkafka 1.x has no image: it needs an older Python)."""
    from conformance.containers.engine import ensure_compose, ensure_engine, remove_leftovers
    from conformance.containers.images import MEMBER_KINDS, ensure_images
    from conformance.members.kinds.librdkafka import needs_legacy_python

    started = time.monotonic()
    client = ensure_engine()
    ensure_compose()
    removed = remove_leftovers(client)
    if any(removed.values()):
        print(f"setup: removed what dead runs left: {removed}")
    images = [s for s in specs if s.kind in MEMBER_KINDS
              and not (s.kind == "librdkafka" and needs_legacy_python(s.version))]
    built = ensure_images(brokers, images, client=client)
    print(f"setup: docker engine and {len(built)} images ready in {time.monotonic() - started:.1f}s")
