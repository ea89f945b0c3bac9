"""Member kind ``sarama``: the Go client Sarama, one harness binary per version.

``sarama@V`` is ``clients/sarama/harness`` built with the Go toolchain against
Sarama ``vV`` into ``<CACHE_DIR>/sarama/V/harness`` (the kind's
:func:`~conformance.members.kinds.cache_dir`; module cache under ``config.GO_DIR``). The build is atomic (a temporary directory renamed into
place) and idempotent (a finished binary is reused).

Module path: releases up to 1.38.1 are ``github.com/Shopify/sarama``; from
1.40.0 ``github.com/IBM/sarama``. Which one serves a version is asked of the
Go module proxy by exact version (:func:`module_for`), since its version lists
omit versions it serves (IBM v1.41.0 and v1.41.1). The harness
source imports ``github.com/IBM/sarama``; for a Shopify release the build
copies the source into its temporary build directory and rewrites that import
path there (a ``replace`` directive cannot rename a module: Go rejects a
replacement whose go.mod declares another path). The generated go.mod
requires the one module at the exact version.

Features by version, read from the releases' sources (the module proxy's zips;
:data:`FEATURES`), and how the one harness source builds across them: each
version-dependent call sits in a file pair selected by a build tag
(:func:`build_tags`), so the harness builds against every release from
:data:`OLDEST`:

- 1.19.0+: ``ConsumerGroup`` with ``MarkOffset``; marks reach the broker
  through the session's offset manager, which flushes every
  ``Consumer.Offsets.CommitInterval`` (1 s) and when the session ends.
- 1.24.0+: ``BalanceStrategySticky`` (tag ``sarama_sticky``; before it,
  ``range`` and ``roundrobin`` only).
- 1.27.0+: ``ConsumerGroupSession.Commit`` (synchronous commits; tag
  ``sarama_session_commit``). Before it the harness marks and lets the
  offset manager flush (``commit_marked.go``), so a ``committed`` event
  records offsets handed to Sarama rather than a finished commit, and the
  offset manager's automatic flush stays on in every commit mode.
- 1.34.0+: ``Consumer.Group.InstanceId``, static membership (tag
  ``sarama_instance_id``; without it a static member is refused before the run
  and, should one be configured anyway, by the harness with a fatal error).
- 1.37.0+: ``Consumer.Group.Rebalance.GroupStrategies``, a list of assignors
  (tag ``sarama_group_strategies``; before it the one ``Rebalance.Strategy``,
  so a member takes exactly one assignor).
- 1.60.0+: ``NewBalanceStrategyCooperativeSticky`` (leader side; tag
  ``sarama_coop``).
- 1.61.0+: member-side incremental rebalancing (IBM/sarama PR 3696,
  ``consumer_group_cooperative.go``: the session survives a rebalance, only
  revoked claims stop). 1.60.x lacks that file. So 1.61.0 is the first
  release with full KIP-429 member support, and ``supports_cooperative`` is
  true from there. Before 1.60: eager ``sticky`` (1.24+), ``range``, ``roundrobin``,
  so older releases are eager-only members.

Expected verdicts: Sarama before 1.43.3 could send two OffsetCommit requests
of one member out of order (fixed by "maintain ordering of offset commit
requests", IBM/sarama PR 2947, in 1.43.3), so the broker accepts an offset
below one it accepted a few milliseconds earlier. Cells with ``sarama@1.38.1``
fail D2 with every violation its own (seen in rolling-restart and
crash-restart): a true verdict on that version; 1.61.1 with the same harness
passes. A Sarama leader before 1.41.1 cannot decode some subscriptions ("invalid length", L1):
before 1.31.0 any of version 1 or later (Java 2.4+), from 1.31.0 any of version 2 or later (Java
3.4+, the reference); both are rows of the known-issues table and entries of the bug corpus
(``fixtures/bug-corpus/``), seen with 1.30.0 beside Java 2.4.1 and 1.38.1 beside Java 4.4.0.
"""

from __future__ import annotations

import re
from pathlib import Path

from conformance import go_install, registries
from conformance.errors import UsageError
from conformance.members.golden import go_generator, run
from conformance.members.harness_config import STRATEGIES
from conformance.members.kinds import Feature, ImageRecipe, cache_dir, harness_dir, release_tuple
from conformance.members.known_issues import KnownIssue

KIND = "sarama"
SOURCE_DIR: Path = harness_dir(KIND) / "harness"
IBM_MODULE = "github.com/IBM/sarama"
SHOPIFY_MODULE = "github.com/Shopify/sarama"

DEFAULT_VERSION = "1.61.1"
#: The longest the member's fetch long-poll waits for records (P1 reads it):
#: Sarama's ``Consumer.MaxWaitTime`` default (``NewConfig``; the harness leaves it).
FETCH_MAX_WAIT_MS: int = 500
#: Versions exercised by the harness tests against a real broker, the default first.
KNOWN_VERSIONS: tuple[str, ...] = ("1.61.1", "1.38.1", "1.30.0", "1.27.2", "1.19.0")
#: What ``setup --all`` installs: the newest, 1.38.1 (the harness tests), 1.30.0 (the one-assignor
#: build's test), 1.27.2 (the first with ConsumerGroupSession.Commit) and the oldest minor's newest
#: patch; CI's contract test runs the first and the last.
TEST_VERSIONS: tuple[str, ...] = ("1.61.1", "1.38.1", "1.30.0", "1.27.2", "1.19.0")
#: The newest patch of every minor from OLDEST (the nightly contract tier), each asked of the proxy
#: by exact version (Shopify path before 1.40, IBM from 1.40; there is no 1.39).
MINOR_VERSIONS: tuple[str, ...] = (
    "1.61.1", "1.60.2", "1.50.3", "1.49.0", "1.48.2", "1.47.0", "1.46.3", "1.45.2", "1.44.0", "1.43.3", "1.42.2",
    "1.41.3", "1.40.1", "1.38.1", "1.37.2", "1.36.0", "1.35.0", "1.34.1", "1.33.0", "1.32.0", "1.31.1", "1.30.1",
    "1.29.1", "1.28.0", "1.27.2", "1.26.4", "1.25.0", "1.24.1", "1.23.1", "1.22.1", "1.21.0", "1.20.1", "1.19.0")
#: Where releases come from, for messages.
REGISTRY = f"the Go module proxy ({IBM_MODULE}, {SHOPIFY_MODULE})"
#: The oldest release the harness builds against, and why.
OLDEST = "1.19.0"
OLDEST_WHY = "the Sarama harness needs the ConsumerGroup API, which Sarama has from 1.19.0"
#: Releases whose golden vectors scripts/regen-golden.sh writes (clients/sarama/golden), as
#: (module path, version, build tags): sarama_gen = GenerationID/RackID fields (1.45+),
#: sarama_coop = the cooperative-sticky strategy (1.60+).
GOLDEN_RELEASES: tuple[tuple[str, str, str], ...] = (
    (SHOPIFY_MODULE, "v1.38.1", ""),
    (IBM_MODULE, "v1.45.2", "sarama_gen"),
    (IBM_MODULE, "v1.60.1", "sarama_gen,sarama_coop"),
    (IBM_MODULE, "v1.61.1", "sarama_gen,sarama_coop"),
)
GOLDEN_VERSIONS: tuple[str, ...] = tuple(v.removeprefix("v") for _, v, _ in GOLDEN_RELEASES)

_SRC = "Sarama's config.go / balance_strategy.go of each release (module proxy zips)"
FEATURES: tuple[Feature, ...] = (
    Feature("assignor:range", None, _SRC),
    Feature("assignor:roundrobin", None, _SRC),
    Feature("assignor:sticky", "1.24.0", "BalanceStrategySticky, balance_strategy.go of 1.24.0"),
    Feature("static-membership", "1.34.0", "Consumer.Group.InstanceId, config.go of 1.34.0"),
    Feature("assignor-list", "1.37.0", "Consumer.Group.Rebalance.GroupStrategies, config.go of 1.37.0"),
    Feature("assignor:cooperative-sticky", "1.60.0", "NewBalanceStrategyCooperativeSticky, 1.60.0"),
    Feature("mix-eager-cooperative", "1.60.0", "the protocol is chosen at construction: any eager strategy -> EAGER"),
    Feature("cooperative", "1.61.0", "IBM/sarama PR 3696, consumer_group_cooperative.go (1.61.0)"),
)

#: Its rows of the known-issues table (conformance.members.known_issues); see "Expected verdicts" above.
KNOWN_ISSUES: tuple[KnownIssue, ...] = (
    KnownIssue("sarama", None, "1.43.3", "D2", "IBM/sarama PR 2947",
               "two OffsetCommit requests of one member can go out of order, so the broker accepts an offset "
               "below one it accepted a few milliseconds earlier",
               # D2's culprit is the member whose commit took the offset back: here its own earlier commit.
               evidence=(("same_member", True),)),
    # Before 1.31.0 ConsumerGroupMemberMetadata.decode reads Version, Topics and UserData only, and
    # Sarama's decoder refuses the bytes left over: a v1+ subscription's OwnedPartitions (Java 2.4+).
    KnownIssue("sarama", None, "1.31.0", "L1", "IBM/sarama issue 1808 (OwnedPartitions decoded from 1.31.0)",
               "as leader it cannot decode a member's subscription of version 1 or later (the OwnedPartitions "
               "after UserData: 'error decoding packet: invalid length'), so it sends no assignments",
               evidence=(("leader_errors", ["consume: kafka: error decoding packet: invalid length"]),)),
    # From 1.31.0 the decoder reads OwnedPartitions but still nothing after it, so a version 2 or 3
    # subscription (Java 3.4 and later: GenerationId, RackId) leaves bytes over, with the same error, until
    # commit e9bd1b89 ("handle V3 member metadata", first in 1.41.1). Seen: 1.38.1 leading Java 4.4.0.
    KnownIssue("sarama", "1.31.0", "1.41.1", "L1", "IBM/sarama commit e9bd1b89 (V3 member metadata decoded from 1.41.1)",
               "as leader it cannot decode a member's subscription of version 2 or later (GenerationId and RackId "
               "after OwnedPartitions: 'error decoding packet: invalid length'), so it sends no assignments",
               evidence=(("leader_errors", ["consume: kafka: error decoding packet: invalid length"]),)),
    # adjustCooperativeAssignment (balance_strategy_cooperative_sticky.go, 1.60.0 on) withholds a partition
    # that moves only when its new owner did not declare it: it reads every member's raw OwnedPartitions,
    # including a stale claim the sticky plan ranked below the valid one. Found by a hunt (issue #42).
    KnownIssue("sarama", "1.60.0", None, "R1", "docs/client-bugs/sarama-stale-claim-handover.md "
               "(balance_strategy_cooperative_sticky.go adjustCooperativeAssignment; no upstream report yet)",
               "as cooperative leader it hands a partition to a member whose claim of it is stale (declared without "
               "a generation, after it lost it) while its valid owner still holds it, without the revoke round",
               evidence=(("receiver_declared_generation", -1),)),
    # partitionOffsetManager (offset_manager.go) takes its leader epoch from the OffsetFetch that started it and
    # commits every later offset with it, however the partition's leader epoch moved since (read in 1.34.1 to
    # 1.61.1; 1.33.0 commits no epoch). Found by a hunt (issue #42): a KIP-320 consumer that takes the partition over
    # resumes where that old epoch ended and reads again what Sarama had consumed and committed.
    *(KnownIssue("sarama", "1.34.1", None, invariant, "docs/client-bugs/sarama-stale-commit-leader-epoch.md "
                 "(offset_manager.go partitionOffsetManager.leaderEpoch; no upstream report yet)",
                 "it commits offsets with the leader epoch of the offset it first fetched, never updated: after the "
                 "partition's leader epoch moves, the next owner's KIP-320 check rewinds it to where that epoch ended",
                 evidence=(("stale_leader_epoch", True),)) for invariant in ("D2", "D3")),
)

FIRST_COOPERATIVE_STRATEGY = (1, 60, 0)
FIRST_COOPERATIVE_MEMBER = (1, 61, 0)   # IBM/sarama PR 3696
FIRST_IBM_MODULE = (1, 40, 0)
FIRST_INSTANCE_ID = (1, 34, 0)
FIRST_GROUP_STRATEGIES = (1, 37, 0)
FIRST_STICKY = (1, 24, 0)
FIRST_SESSION_COMMIT = (1, 27, 0)


def known_versions() -> list[str]:
    return list(KNOWN_VERSIONS)


def supports_cooperative(version: str) -> bool:
    return release_tuple(version) >= FIRST_COOPERATIVE_MEMBER


def strategies_supported(version: str) -> list[str]:
    have = {f.name for f in FEATURES if f.available(version)}
    return [s for s in STRATEGIES if f"assignor:{s}" in have]


def build_tags(version: str) -> list[str]:
    """The harness's build tags for ``version``: one per version-dependent API it has."""
    v = release_tuple(version)
    return [tag for tag, first in (("sarama_sticky", FIRST_STICKY),
                                   ("sarama_session_commit", FIRST_SESSION_COMMIT),
                                   ("sarama_instance_id", FIRST_INSTANCE_ID),
                                   ("sarama_group_strategies", FIRST_GROUP_STRATEGIES),
                                   ("sarama_coop", FIRST_COOPERATIVE_STRATEGY)) if v >= first]


def binary(version: str) -> Path:
    return cache_dir(KIND) / version / "harness"


def module_for(version: str) -> str | None:
    """The module path under which the Go module proxy serves Sarama ``version`` (asked by exact
    version, ``@v/VERSION.info``; the proxy's version list can omit versions it serves), or None
    when it serves it under neither. The path of the version's era is asked first (Shopify before
    1.40). RegistryUnreachable when the proxy does not answer."""
    ibm_era = not re.match(r"^\d", version) or release_tuple(version) >= FIRST_IBM_MODULE
    for module in ((IBM_MODULE, SHOPIFY_MODULE) if ibm_era else (SHOPIFY_MODULE, IBM_MODULE)):
        if registries.go_has(module, version):
            return module
    return None


def release_exists(version: str) -> bool:
    """Whether the Go module proxy serves Sarama ``version`` under either module path."""
    return module_for(version) is not None


def listed_versions() -> tuple[str, ...]:
    """The versions the proxy lists under both module paths (possibly incomplete: for naming nearby ones)."""
    return registries.go_versions(IBM_MODULE) + registries.go_versions(SHOPIFY_MODULE)


def is_installed(version: str) -> bool:
    """True when the harness binary of ``version`` is built from the harness source now in the tree
    (stat and one small read: :func:`conformance.go_install.is_current`)."""
    return go_install.is_current(cache_dir(KIND) / version, SOURCE_DIR)


def ensure(version: str) -> None:
    """Build the harness against Sarama ``version`` into cache_dir(KIND)/<version>/harness (idempotent,
    atomic: :func:`conformance.go_install.build_harness`)."""
    if is_installed(version):
        return
    module = module_for(version)
    if module is None:
        from conformance.members.versions import check
        raise UsageError(check(KIND, version) or f"sarama@{version}: the Go module proxy has no such release")
    coop_member = "true" if supports_cooperative(version) else "false"
    go_install.build_harness(
        f"sarama@{version}", SOURCE_DIR, cache_dir(KIND) / version, module, version,
        tags=build_tags(version),
        ldflags=[f"-X main.moduleName={module}", f"-X main.cooperativeMember={coop_member}"],
        # A replace directive cannot rename a module, so a Shopify release gets the import rewritten.
        rewrite={f'"{IBM_MODULE}"': f'"{module}"'} if module != IBM_MODULE else None,
        record={"cooperative_member": coop_member == "true"})


def command(version: str, config_path: Path) -> tuple[list[str], dict[str, str]]:
    return [str(binary(version)), str(config_path)], {}


def image(version: str) -> ImageRecipe:
    """The member image: the static harness binary from the cache (the Go harnesses' one recipe)."""
    return ImageRecipe("member-go.Dockerfile", cache=(binary(version),))


def golden_vectors(version: str, work: Path) -> str:
    """The golden vectors Sarama ``version`` writes (:mod:`conformance.members.golden`): the generator
    (``clients/sarama/golden``, importing ``github.com/IBM/sarama``) built against the release's
    module path with its build tags (:data:`GOLDEN_RELEASES`)."""
    module, tag, tags = next(r for r in GOLDEN_RELEASES if r[1].removeprefix("v") == version)
    binary = go_generator(harness_dir(KIND) / "golden", work, module, tag, f"the Sarama {tag} generator", tags=tags,
                          import_path=IBM_MODULE)
    return run([str(binary), "-version", tag], f"the Sarama {tag} generator")
