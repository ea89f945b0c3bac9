"""Where a run's containers come from: testcontainers starts them on the run's network
(:meth:`conformance.containers.network.RunNetwork.start_container`), against a real engine.

Stories:

- Even where the environment asks for Ryuk, the suite disables it; the started container is
  testcontainers' (its labels beside the suite's), at its fixed address, named, with ``--init``.
- A container the engine creates but refuses to start (its address is taken) is removed before
  the error goes on: nothing of the run is left holding it.
- A container of the run that no handle holds (made while Ctrl-C interrupted its creation) goes
  with the run's label sweep; another run's container stays.

Skipped (saying why) only where no engine can be had.
"""

from __future__ import annotations

from typing import Iterator

import pytest

from conformance.containers.engine import LABEL_RUN, LABEL_SUITE, remove_run_containers, run_labels
from conformance.containers.network import TOXIPROXY, RunNetwork
from conformance.members.spec import MemberSpec

pytestmark = [pytest.mark.slow, pytest.mark.containers]


@pytest.fixture(scope="module")
def client(docker_client: "object") -> "object":
    return docker_client


@pytest.fixture(scope="module")
def toxiproxy(client: "object") -> str:
    from conformance.containers.images import ensure_images
    return ensure_images(["4.4.0"], [MemberSpec.parse("reference")], client=client)["toxiproxy"]


@pytest.fixture()
def network(client: "object") -> Iterator[RunNetwork]:
    labels = run_labels("test-start-container")
    net = RunNetwork(client, "conformance-test-start", labels).create()
    try:
        yield net
    finally:
        remove_run_containers(client, labels[LABEL_RUN])
        net.remove()


def test_testcontainers_starts_it_at_its_address_with_our_labels_and_no_ryuk(
        client: "object", toxiproxy: str, network: RunNetwork, monkeypatch: pytest.MonkeyPatch) -> None:
    # The user's environment asks for Ryuk, and testcontainers has read it already; the suite's
    # cleanup is its labels, so Ryuk stays off (a Ryuk start would also fail: no registry here).
    from testcontainers.core.config import testcontainers_config
    monkeypatch.setenv("TESTCONTAINERS_RYUK_DISABLED", "false")
    monkeypatch.setattr(testcontainers_config, "_ryuk_disabled", False)
    c = network.start_container(toxiproxy, ["-seed", "1"], name="conformance-test-start-toxiproxy",
                                host=TOXIPROXY, labels=network.labels)
    c.reload()
    assert testcontainers_config.ryuk_disabled
    assert not client.containers.list(all=True, filters={"ancestor": testcontainers_config.ryuk_image})
    assert c.status == "running", c.attrs["State"]
    assert c.name == "conformance-test-start-toxiproxy"
    assert {k: c.labels.get(k) for k in network.labels} == network.labels, c.labels
    assert c.labels.get("org.testcontainers") == "true", c.labels
    assert c.attrs["HostConfig"]["Init"] is True
    assert c.attrs["NetworkSettings"]["Networks"][network.name]["IPAddress"] == network.address(TOXIPROXY)


def test_a_refused_start_leaves_no_container(client: "object", toxiproxy: str, network: RunNetwork) -> None:
    # A second container at the first one's address: created, then the engine refuses to start it.
    network.start_container(toxiproxy, None, name="conformance-test-start-first", host=TOXIPROXY,
                            labels=network.labels)
    with pytest.raises(Exception) as refused:
        network.start_container(toxiproxy, None, name="conformance-test-start-second", host=TOXIPROXY,
                                labels=network.labels)
    left = [c.name for c in client.containers.list(all=True, filters={"name": "conformance-test-start-second"})]
    assert left == [], f"{left} left after the refused start ({refused.value})"


def test_the_label_sweep_removes_an_unheld_container_of_the_run_only(
        client: "object", toxiproxy: str, network: RunNetwork) -> None:
    # One container of the run nobody holds, one of another run: the sweep takes the first only.
    ours = client.containers.create(toxiproxy, name="conformance-test-start-unheld", labels=network.labels)
    other = client.containers.create(toxiproxy, name="conformance-test-start-other",
                                     labels=run_labels("another-run"))
    try:
        assert remove_run_containers(client, network.labels[LABEL_RUN]) == [ours.name]
        left = {c.name for c in client.containers.list(all=True, filters={"label": LABEL_SUITE})}
        assert ours.name not in left and other.name in left, left
    finally:
        other.remove(force=True)
