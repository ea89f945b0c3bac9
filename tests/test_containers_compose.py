"""docker-compose.yml for real: up, healthy, a member group forms, down leaves nothing labelled.

Runs with Compose v2 (``docker compose``) or v1 (``docker-compose``); skipped (saying why)
only where no engine or no Compose can be had (not root).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Iterator

import pytest

from conformance import config
from conformance.containers.compose_file import member_kinds
from conformance.containers.engine import compose_command, engine_for_tests, ensure_compose, labelled
from conformance.members.spec import MemberSpec

pytestmark = [pytest.mark.slow, pytest.mark.containers]

COMPOSE_FILE = config.REPO_ROOT / "docker-compose.yml"
#: Every member service (``--profile all`` adds the kinds outside the default set): each kind's image
#: runs its harness for real in one cooperative group.
MEMBERS = member_kinds()


@pytest.fixture(scope="module")
def compose() -> Iterator[tuple["object", list[str]]]:
    client, reason = engine_for_tests()
    if client is None:
        pytest.skip(f"no Docker engine can be had: {reason}")
    argv = compose_command()
    if argv is None:
        if os.geteuid() != 0:
            pytest.skip("no Compose installed and installing Debian's docker-compose needs root")
        argv = ensure_compose()
    from conformance.containers.images import ensure_images
    images = ensure_images(["4.4.0"], [MemberSpec.parse(m) for m in MEMBERS], client=client)
    os.environ.setdefault("CONFORMANCE_BASE", images["base"])
    yield client, argv


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _assigned(history: Path) -> list[list]:
    if not history.is_file():
        return []
    out = []
    for line in history.read_text(encoding="utf-8").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue   # a line being written
        if event.get("event") == "assigned" and event.get("partitions"):
            out.extend(event["partitions"])
    return out


def test_compose_member_configs_are_harness_configs_of_the_images_versions() -> None:
    """Each member service's config (docker/compose/<kind>.json) is a valid harness config naming
    the version its image runs, reaching the broker through its own proxy (no engine needed)."""
    import re

    from conformance.members.harness_config import HarnessConfig

    compose_text = COMPOSE_FILE.read_text(encoding="utf-8")
    proxies = {p["name"]: p for p in json.loads((config.REPO_ROOT / "docker/compose/toxiproxy.json").read_text())}
    for kind in MEMBERS:
        cfg = HarnessConfig.load(config.REPO_ROOT / "docker" / "compose" / f"{kind}.json")
        assert (cfg.client, cfg.group_id, cfg.topics) == (kind, "compose", ["compose"])
        assert f"image: conformance-member-{kind}:{cfg.client_version}" in compose_text
        assert cfg.client_version == MemberSpec.parse(kind).version
        assert cfg.bootstrap_servers == "toxiproxy:" + proxies[kind]["listen"].rsplit(":", 1)[1]
        slot = int(proxies[kind]["upstream"].rsplit(":", 1)[1]) - 9100
        assert re.search(rf"SLOT{slot}://toxiproxy:{cfg.bootstrap_servers.rsplit(':', 1)[1]}\b", compose_text)


def test_compose_up_forms_a_group_and_down_leaves_nothing_labelled(compose: tuple["object", list[str]],
                                                                    tmp_path: Path) -> None:
    client, argv = compose
    project = f"conformancetest{os.getpid()}"
    out = tmp_path / "histories"
    out.mkdir()
    broker_port, toxiproxy_port = _free_port(), _free_port()
    env = dict(os.environ, CONFORMANCE_COMPOSE_OUT=str(out), CONFORMANCE_BROKER_PORT=str(broker_port),
               CONFORMANCE_TOXIPROXY_PORT=str(toxiproxy_port))
    base = [*argv, "-f", str(COMPOSE_FILE), "-p", project, "--profile", "all"]
    started = time.monotonic()
    try:
        up = subprocess.run([*base, "up", "-d", "--no-build"], env=env, capture_output=True, text=True, timeout=400)
        assert up.returncode == 0, up.stdout + up.stderr
        # up -d returns once the broker and toxiproxy were healthy (depends_on: service_healthy).
        states = {c.labels["com.docker.compose.service"]: c.attrs["State"].get("Health", {}).get("Status")
                  for c in client.containers.list(filters={"label": f"com.docker.compose.project={project}"})}
        assert states.get("broker") == "healthy" and states.get("toxiproxy") == "healthy", states
        deadline = time.monotonic() + 240
        owned: dict[str, list] = {}
        while time.monotonic() < deadline:
            owned = {m: _assigned(out / f"{m}.jsonl") for m in MEMBERS}
            if all(owned.values()):
                break
            time.sleep(1)
        assert all(owned.values()), (f"not every member was assigned a partition: {owned}; "
                                     f"{subprocess.run([*base, 'logs', '--tail', '30'], env=env, capture_output=True, text=True).stdout[-4000:]}")
        # The group as the broker sees it, from the host (the HOST listener).
        from kafka.admin import KafkaAdminClient
        admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{broker_port}", request_timeout_ms=30000)
        try:
            # A member that joined last may still be rebalancing: wait (bounded) for a stable round.
            deadline = time.monotonic() + 90
            while True:
                group = admin.describe_groups(["compose"])["compose"]
                assigned = sorted(p for m in group["members"] for t in m["member_assignment"]["assigned_partitions"]
                                  for p in t["partitions"])
                # (between a cooperative round that revokes and the one that reassigns, the group is
                # Stable with partitions unowned)
                settled = (group["group_state"] == "Stable" and len(group["members"]) == len(MEMBERS)
                           and assigned == list(range(6)))
                if settled or time.monotonic() > deadline:
                    break
                time.sleep(1)
            assert group["group_state"] == "Stable" and group["protocol_data"] == "cooperative-sticky", group
            assert sorted(m["client_id"] for m in group["members"]) == sorted(MEMBERS), group
            assert assigned == list(range(6)), group   # num.partitions=6, each owned by exactly one member
        finally:
            admin.close()
        produced = [json.loads(line) for line in (out / "producer.jsonl").read_text().splitlines()]
        assert any(e.get("event") == "produced" for e in produced)
        print(f"compose: group of {', '.join(MEMBERS)} formed {time.monotonic() - started:.1f}s after up")
    finally:
        down = subprocess.run([*base, "down", "-v", "--remove-orphans", "--timeout", "10"], env=env,
                              capture_output=True, text=True, timeout=300)
        if down.returncode != 0:   # never leave the stack behind, even when down itself fails
            for c in client.containers.list(all=True, filters={"label": f"com.docker.compose.project={project}"}):
                c.remove(force=True, v=True)
            for n in client.networks.list(filters={"label": f"com.docker.compose.project={project}"}):
                n.remove()
    assert down.returncode == 0, down.stdout + down.stderr
    assert not client.containers.list(all=True, filters={"label": f"com.docker.compose.project={project}"})
    left = labelled(client)
    assert not [n for n in left["containers"] if n.startswith(project)], left
    assert not [n for n in left["networks"] if n.startswith(project)], left
    assert not [n for n in left["volumes"] if n.startswith(project)], left
