"""Pairwise covering: groups of members, each on one broker, in which every required pair meets.

The required pairs of a set of member labels ``L`` (``kind@version``, or a spec with faults) and
brokers ``B`` are every unordered pair of two distinct labels and every (label, broker) pair.
:func:`cover` returns groups of at most ``size`` distinct labels, each with one broker, such that
every required pair meets in at least one group: two labels meet when both are in the group,
a label and a broker when the label is in a group on that broker.

The algorithm is greedy (each group covers as many still-uncovered pairs as it can):

1. the group starts with the label that has the most uncovered pairs;
2. its broker is the one that label has met least (most uncovered (label, broker) pairs);
3. labels are added one at a time, each time the one that covers the most uncovered pairs with
   the group so far and with the broker (a label that covers nothing still fills the group,
   so that every group is ``size`` members when there are that many labels);
4. repeat until nothing is uncovered.

Each group covers at least one uncovered pair, so it ends; with ``n`` labels and ``k`` members a
group covers up to ``k(k-1)/2`` label pairs, so the count is near ``n(n-1)/(k(k-1))`` groups
rather than the ``n(n-1)/2`` of one group per pair.

Worked example (labels a, b, c, d; brokers X, Y; size 3; ``random.Random(1)``): group 1 is
a, b, c on X (a-b, a-c, b-c; a, b, c with X). Uncovered: a-d, b-d, c-d, d-X and every label with
Y. Group 2 starts with d (5 uncovered pairs); X and Y are both new to d and the tie goes to X;
b and c each add one pair (b-d, c-d): b, c, d on X. Group 3 starts with a (a-d, a-Y) on Y and
adds b and d: a, b, d on Y. Only c-Y is left: group 4 is a, b, c on Y. Four groups, where one
group per pair would be fourteen.

Ties are broken by a random order drawn once from ``rng``, so the groups are a function of
the inputs and the seed: the same seed gives the same groups (tested).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from itertools import combinations
from typing import Sequence


@dataclass(frozen=True)
class Group:
    """Labels that run together in one group, in the order of the input labels, on ``broker``."""

    labels: tuple[str, ...]
    broker: str


def required_pairs(labels: Sequence[str], brokers: Sequence[str]) -> set[tuple[str, str]]:
    """Every pair that must meet: (a, b) for labels a < b, and (label, "broker:" + broker)."""
    pairs = {tuple(sorted(p)) for p in combinations(dict.fromkeys(labels), 2)}
    pairs |= {(label, f"broker:{b}") for label in labels for b in brokers}
    return pairs  # type: ignore[return-value]


def covered_pairs(groups: Sequence[Group]) -> set[tuple[str, str]]:
    """The pairs (as :func:`required_pairs` writes them) that meet in ``groups``."""
    pairs: set[tuple[str, str]] = set()
    for g in groups:
        pairs |= {tuple(sorted(p)) for p in combinations(g.labels, 2) if p[0] != p[1]}  # type: ignore[misc]
        pairs |= {(label, f"broker:{g.broker}") for label in g.labels}
    return pairs


def cover(labels: Sequence[str], brokers: Sequence[str], size: int, rng: random.Random) -> list[Group]:
    """Groups in which every required pair of ``labels`` and ``brokers`` meets (see the module)."""
    labels = list(dict.fromkeys(labels))
    if not labels or not brokers:
        raise ValueError("cover needs at least one label and one broker")
    if size < 2:
        raise ValueError("a group has at least two members")
    order = {label: i for i, label in enumerate(rng.sample(labels, len(labels)))}
    broker_order = {b: i for i, b in enumerate(rng.sample(list(brokers), len(brokers)))}
    position = {label: i for i, label in enumerate(labels)}
    uncovered = required_pairs(labels, brokers)

    def open_pairs(label: str) -> int:
        return sum(1 for p in uncovered if label in p)

    def gain(label: str, group: list[str], broker: str) -> int:
        return (sum(1 for m in group if tuple(sorted((label, m))) in uncovered)
                + ((label, f"broker:{broker}") in uncovered))

    groups: list[Group] = []
    while uncovered:
        first = max(labels, key=lambda x: (open_pairs(x), -order[x]))
        broker = max(brokers, key=lambda b: ((first, f"broker:{b}") in uncovered, -broker_order[b]))
        members = [first]
        while len(members) < min(size, len(labels)):
            rest = [x for x in labels if x not in members]
            members.append(max(rest, key=lambda x: (gain(x, members, broker), -order[x])))
        group = Group(tuple(sorted(members, key=position.__getitem__)), broker)
        uncovered -= covered_pairs([group])
        groups.append(group)
    return groups
