"""Member kind ``franz-go``: the Go client franz-go (package kgo), one harness binary per version.

``franz-go@V`` is ``clients/franz-go/harness`` built by the suite's one Go build
(:func:`conformance.go_install.build_harness`: module and build caches under ``config.GO_DIR``, no
toolchain download, atomic and idempotent) against ``github.com/twmb/franz-go vV`` into
``<CACHE_DIR>/franz-go/V/harness``. The generated go.mod requires that one module at the exact
version (``go mod tidy`` takes kmsg and the rest at what that release requires). The one source
builds against every release from :data:`OLDEST`; its one build tag, ``franzgo_848``
(:func:`build_tags`, from :data:`FIRST_SERVER_SIDE_BALANCER`), adds ``kgo.ServerSideBalancer``.

What the releases have, read from their sources (the proxy's ``@v`` zips):

- every 1.x has the four balancers (``CooperativeStickyBalancer`` since before 1.0; it is kgo's
  default balancer), so ``supports_cooperative`` is true for all of them. Before 1.13.0 a
  cooperative-sticky balancer listed with an eager one could make the client sometimes think it
  was eager (franz-go's changelog, 1.13.0), so ``mix-eager-cooperative`` starts there; lists of
  one protocol are unaffected. Unlike Java (eager until every listed assignor is cooperative),
  kgo runs a session cooperatively whenever the protocol the group chose is cooperative-sticky.
- the harness needs ``Client.GroupMetadata`` (member id and generation for the history), which
  franz-go has from 1.7.0: :data:`OLDEST`.
- subscriptions (the golden vectors, fixtures/golden/franz-go-*.json): 1.7.0 writes v0 for
  range, roundrobin and sticky and v1 for cooperative-sticky; 1.20.2 and 1.22.3 write v3 for every
  balancer (generation; a null rack unless ``Rack`` is set). Sticky and cooperative-sticky
  userData are the StickyAssignor layout, not Java's bare cooperative generation: v1 (previous
  assignment, then generation) once the member has a generation; before its first assignment
  (generation -1) kmsg writes no generation, so a new member's userData is the v0 layout
  ``00000000``, which also reads as a bare generation 0.
- KIP-848 (``franz-go+consumer``): ``kgo.ServerSideBalancer()`` from 1.22.0 (opt-in; classic
  stays kgo's default; franz-go's CHANGELOG v1.22.0 and config.go), the ``consumer-protocol``
  feature. (1.19-1.21 had a hidden beta opt-in, a context key, which the suite does not run.) kgo
  then speaks ConsumerGroupHeartbeat v1 with a member id of its own, the server assignor named
  by its first balancer (sticky, cooperative-sticky: ``uniform``; range: ``range``); the harness
  passes kgo's balancers unwrapped and puts cooperative-sticky first when the list starts with
  roundrobin (clients/franz-go/harness/balancers.go). What the history gets: ``protocol``
  ``consumer`` on every event, and as ``generation`` the epoch ``Client.GroupMetadata`` gives
  (kgo documents it as the member epoch); ``assigned`` / ``revoked`` / ``lost`` carry it as
  ``member_epoch``. kgo exposes no other epoch: a callback sees the epoch kgo holds at that moment
  (after a fence kgo has gone back to epoch 0). kgo silently runs classic on a broker without
  ConsumerGroupHeartbeat v1; the harness notices from kgo's log and stops with a fatal error.
"""

from __future__ import annotations

from pathlib import Path

from conformance import go_install, registries
from conformance.errors import UsageError
from conformance.members.golden import go_generator, run
from conformance.members.harness_config import STRATEGIES
from conformance.members.kinds import Feature, ImageRecipe, cache_dir, harness_dir, release_tuple
from conformance.members.known_issues import KnownIssue

KIND = "franz-go"
MODULE = "github.com/twmb/franz-go"
SOURCE_DIR: Path = harness_dir(KIND) / "harness"

#: The newest release on the Go module proxy (``go list -m github.com/twmb/franz-go@latest``, late 2026).
DEFAULT_VERSION = "1.22.3"
#: The longest the member's fetch long-poll waits for records (P1 reads it):
#: kgo's ``FetchMaxWait`` default for group consumers (5 s, ``cfg.validate``; the harness leaves it).
FETCH_MAX_WAIT_MS: int = 5000
#: Versions exercised by the harness tests against a real broker; the default first.
KNOWN_VERSIONS: tuple[str, ...] = ("1.22.3", "1.7.0")
#: What ``setup --all`` installs and the CI contract test runs: the newest and the oldest the harness builds.
TEST_VERSIONS: tuple[str, ...] = ("1.22.3", "1.7.0")
#: The newest patch of every minor from 1.7 (franz-go's CHANGELOG.md of 1.22.3), for the nightly tier.
MINOR_VERSIONS: tuple[str, ...] = (
    "1.22.3", "1.21.7", "1.20.7", "1.19.5", "1.18.1", "1.17.1", "1.16.1", "1.15.4", "1.14.4", "1.13.6", "1.12.1",
    "1.11.7", "1.10.4", "1.9.1", "1.8.0", "1.7.1")
#: Where releases come from, for messages.
REGISTRY = f"the Go module proxy ({MODULE})"
#: The oldest release the harness builds against, and why.
OLDEST = "1.7.0"
OLDEST_WHY = ("the franz-go harness reads member id and generation with kgo.Client.GroupMetadata, which "
              "franz-go has from 1.7.0")
#: Releases whose balancers write fixtures/golden/franz-go-<v>.json (clients/franz-go/golden): the
#: harness's oldest (subscription v0/v1), 1.20.2 (v3) and the newest.
GOLDEN_VERSIONS: tuple[str, ...] = ("1.7.0", "1.20.2", "1.22.3")

#: In the default matrix. Its leader's L4 findings in the first six-kind leader-rotation cell were
#: triaged (2026-11-26): its balancer does not read the owned partitions of a cooperative member
#: whose subscription has no generation (kafka-python 3.x writes v1 without userData), so it moves
#: what that member owns where Java's assignor keeps it: :data:`KNOWN_ISSUES`.
IN_DEFAULT_MIX: bool = True

#: Its rows of the known-issues table (conformance.members.known_issues).
KNOWN_ISSUES: tuple[KnownIssue, ...] = (
    KnownIssue("franz-go", None, None, "L4", "docs/client-bugs/franz-go-generationless-owned.md "
               "(pkg/kgo/internal/sticky/sticky.go parseMemberMetadata; no upstream report yet)",
               "the cooperative-sticky leader reads a member's OwnedPartitions only when its subscription carries "
               "a generation (v2+), else only a StickyAssignor userData: a v1 member's owned partitions (kafka-python "
               "3.x; Java before 3.4) count as unowned, and it moves them where no move is needed",
               evidence=(("taken_by", "franz-go"), ("declared_without_generation", True))),
    KnownIssue("franz-go", None, None, "R3", "docs/client-bugs/franz-go-generationless-owned.md "
               "(the same bug seen as a revoke undone)",
               "the same unread claims, when the balance then gives the partition back: the v1 member revokes a "
               "partition it keeps, and gets it back in the next round",
               evidence=(("taken_by", "franz-go"), ("declared_without_generation", True))),
)

_SRC = "kgo's group_balancer.go / config.go of each release (module proxy zips)"
FEATURES: tuple[Feature, ...] = (
    Feature("assignor:cooperative-sticky", None, _SRC + "; kgo's default balancer"),
    Feature("assignor:sticky", None, _SRC),
    Feature("assignor:range", None, _SRC),
    Feature("assignor:roundrobin", None, _SRC),
    Feature("cooperative", None, "CooperativeStickyBalancer and cooperative group sessions predate 1.0"),
    Feature("static-membership", None, "kgo.InstanceID, config.go of 1.7.0"),
    Feature("assignor-list", None, "kgo.Balancers takes a list"),
    # Listing cooperative-sticky with an eager balancer works from 1.13.0: before it the client
    # "would internally sometimes think it was eager consuming" (franz-go CHANGELOG, v1.13.0).
    Feature("mix-eager-cooperative", "1.13.0", "franz-go CHANGELOG v1.13.0 (mixed balancer lists fixed)"),
    Feature("protocol-of-chosen-assignor", "1.13.0",
            "pkg/kgo/consumer_group.go: from 1.13.0 'cooperative' is the balancer chosen during Join; "
            "1.12.1 was cooperative only if all configured balancers were"),
    Feature("consumer-protocol", "1.22.0",
            "kgo.ServerSideBalancer, KIP-848 (franz-go CHANGELOG v1.22.0, pkg/kgo/config.go; the hidden beta "
            "context key of 1.19-1.21 is not run)"),
)
#: KIP-848 through kgo.ServerSideBalancer: the ``consumer-protocol`` feature and the ``franzgo_848`` tag.
FIRST_SERVER_SIDE_BALANCER = (1, 22, 0)


def known_versions() -> list[str]:
    return list(KNOWN_VERSIONS)


def supports_cooperative(version: str) -> bool:
    """True: every franz-go release the harness builds has CooperativeStickyBalancer (kgo's default)."""
    return any(f.name == "cooperative" and f.available(version) for f in FEATURES)


def strategies_supported(version: str) -> list[str]:
    have = {f.name for f in FEATURES if f.available(version)}
    return [s for s in STRATEGIES if f"assignor:{s}" in have]


def supports_server_side_balancer(version: str) -> bool:
    """Whether franz-go ``version`` has kgo.ServerSideBalancer (KIP-848): what ``+consumer`` runs."""
    return release_tuple(version) >= FIRST_SERVER_SIDE_BALANCER


def build_tags(version: str) -> list[str]:
    """The harness's build tags for ``version``: ``franzgo_848`` (server_side.go, which calls
    kgo.ServerSideBalancer) from 1.22.0; none before (server_side_none.go refuses consumer)."""
    return ["franzgo_848"] if supports_server_side_balancer(version) else []


def binary(version: str) -> Path:
    return cache_dir(KIND) / version / "harness"


def is_installed(version: str) -> bool:
    """True when the harness binary of ``version`` is built from the harness source now in the tree
    (stat and one small read: :func:`conformance.go_install.is_current`)."""
    return go_install.is_current(cache_dir(KIND) / version, SOURCE_DIR)


def release_exists(version: str) -> bool:
    """Whether the Go module proxy serves franz-go ``version`` (asked by exact version,
    ``@v/VERSION.info``: its list omits some versions it serves). RegistryUnreachable when the
    proxy does not answer."""
    return registries.go_has(MODULE, version)


def listed_versions() -> tuple[str, ...]:
    """The versions the proxy lists (possibly incomplete: for naming nearby ones)."""
    return registries.go_versions(MODULE)


def ensure(version: str) -> None:
    """Build the harness against franz-go ``version`` into cache_dir(KIND)/<version>/harness
    (idempotent, atomic: :func:`conformance.go_install.build_harness`). UsageError (from
    :func:`conformance.members.versions.check`) for a release below :data:`OLDEST` or one the proxy
    does not serve, naming the nearest it lists."""
    if is_installed(version):
        return
    from conformance.members.versions import check
    problem = check(KIND, version)
    if problem:
        raise UsageError(problem)
    go_install.build_harness(f"franz-go@{version}", SOURCE_DIR, cache_dir(KIND) / version, MODULE, version,
                             tags=build_tags(version))


def command(version: str, config_path: Path) -> tuple[list[str], dict[str, str]]:
    return [str(binary(version)), str(config_path)], {}


def image(version: str) -> ImageRecipe:
    """The member image: the static harness binary from the cache (the Go harnesses' one recipe)."""
    return ImageRecipe("member-go.Dockerfile", cache=(binary(version),))


def golden_vectors(version: str, work: Path) -> str:
    """The golden vectors franz-go ``version`` writes (:mod:`conformance.members.golden`): the
    generator (``clients/franz-go/golden``) built in a module requiring franz-go ``v<version>``."""
    binary = go_generator(harness_dir(KIND) / "golden", work, MODULE, f"v{version}", f"the franz-go {version} generator")
    return run([str(binary), "-version", f"v{version}"], f"the franz-go {version} generator")
