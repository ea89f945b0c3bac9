"""The container path's images and engine, against a real Docker engine.

Skipped (saying why) only where no engine can be had: not root and none answering. As root
(CI) the engine is installed and started if need be, and a failure there fails the tests.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from functools import partial

import pytest

from conformance.containers.engine import LABEL_SUITE, labelled, remove_leftovers, run_labels
from conformance.members.spec import MemberSpec

pytestmark = [pytest.mark.slow, pytest.mark.containers]

BROKER = "4.4.0"


@pytest.fixture(scope="module")
def client(docker_client: "object") -> "object":
    return docker_client


@pytest.fixture(scope="module")
def images(client: "object") -> dict[str, str]:
    from conformance.containers.images import ensure_images
    return ensure_images([BROKER], [MemberSpec.parse("reference"), MemberSpec.parse("java")], client=client)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_setup_rejects_an_unknown_backend_in_one_line() -> None:
    proc = subprocess.run([sys.executable, "-m", "conformance", "setup", "--backend", "podman"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "podman" in proc.stderr


def test_images_are_built_labelled_and_not_rebuilt(client: "object", images: dict[str, str]) -> None:
    from conformance.containers.images import LABEL_INPUTS, ensure_images
    assert set(images) >= {"base", f"broker:{BROKER}", "toxiproxy", "member:reference@0.1.0",
                           "member:java@4.4.0", "tools"}
    ids = {}
    for key, name in images.items():
        if key == "base" and not name.startswith("conformance-"):
            continue   # a public base is not ours to label
        image = client.images.get(name)
        assert image.labels.get(LABEL_SUITE) == "1", name
        assert image.labels.get(LABEL_INPUTS), name
        ids[name] = image.id
    started = time.monotonic()
    again = ensure_images([BROKER], [MemberSpec.parse("reference"), MemberSpec.parse("java")], client=client)
    assert again == images
    assert {n: client.images.get(n).id for n in ids} == ids, "unchanged inputs must not rebuild an image"
    assert time.monotonic() - started < 60


def test_member_image_runs_the_processes_paths_command(client: "object", images: dict[str, str]) -> None:
    script = client.containers.run(images["member:java@4.4.0"], entrypoint=["cat", "/opt/member/run"],
                                   remove=True, labels={LABEL_SUITE: "1"}).decode()
    assert "conformance.harness.Main" in script and "/cache/java/kafka-clients-4.4.0/*" in script
    assert "-XX:+UseSerialGC" in script   # the processes path's JVM flags, unchanged
    # Misuse of the entrypoint is exit 2 with a usage line, like the harnesses themselves.
    c = client.containers.run(images["member:reference@0.1.0"], detach=True, labels={LABEL_SUITE: "1"})
    try:
        assert c.wait(timeout=120)["StatusCode"] == 2
        assert b"usage: run CONFIG_JSON" in c.logs()
    finally:
        c.remove(force=True)


def test_broker_image_becomes_ready_for_metadata_and_produce_from_the_host(client: "object",
                                                                          images: dict[str, str]) -> None:
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    port = _free_port()
    props = "\n".join([
        f"listeners=CONTROLLER://127.0.0.1:9093,DIRECT://0.0.0.0:9092,HOST://0.0.0.0:{port}",
        f"advertised.listeners=DIRECT://broker:9092,HOST://127.0.0.1:{port}",
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,DIRECT:PLAINTEXT,HOST:PLAINTEXT"])
    started = time.monotonic()
    c = client.containers.run(images[f"broker:{BROKER}"], detach=True, init=True, labels=run_labels("test-broker"),
                              environment={"KAFKA_PROPERTIES": props}, ports={f"{port}/tcp": ("127.0.0.1", port)})
    try:
        status = ""
        while time.monotonic() - started < 300:   # 3.6-7.4 s on a quiet machine; minutes under heavy load
            c.reload()
            status = c.attrs["State"].get("Health", {}).get("Status", "")
            if status == "healthy" or c.status == "exited":
                break
            time.sleep(0.5)
        assert status == "healthy", f"broker container {status or c.status}: {c.logs()[-2000:]!r}"
        ready = time.monotonic() - started
        admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{port}", request_timeout_ms=30000)
        try:
            admin.create_topics([NewTopic("probe", 1, 1)])
            assert [b["port"] for b in admin.describe_cluster()["brokers"]] == [port]
        finally:
            admin.close()
        producer = KafkaProducer(bootstrap_servers=f"127.0.0.1:{port}", acks="all")
        try:
            assert producer.send("probe", b"x").get(timeout=30).offset == 0
        finally:
            producer.close()
        print(f"broker container ready (healthy) in {ready:.1f}s, produced at {time.monotonic() - started:.1f}s")
    finally:
        c.remove(force=True)
    assert not [n for n in labelled(client)["containers"] if n == c.name]


def test_testcontainers_starts_a_suite_image_and_reaches_its_published_port(images: dict[str, str]) -> None:
    """The container backend orchestrates with testcontainers: with the engine module's environment
    (no Ryuk, the published ports on 127.0.0.1 here) it starts our image and reaches it."""
    import json
    import urllib.request

    from testcontainers.core.container import DockerContainer

    container = DockerContainer(images["toxiproxy"]).with_exposed_ports(8474).with_kwargs(
        labels=run_labels("test-testcontainers"), init=True)
    with container:
        url = f"http://{container.get_container_host_ip()}:{container.get_exposed_port(8474)}/proxies"
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(url, timeout=5) as resp:
                    assert json.loads(resp.read()) == {}
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        name = container.get_wrapped_container().name
    from conformance.containers.engine import engine
    assert name not in labelled(engine())["containers"]


def test_remove_leftovers_removes_dead_runs_and_spares_live_ones(client: "object", images: dict[str, str]) -> None:
    dead_proc = subprocess.Popen(["true"])
    dead_proc.wait()
    dead = dict(run_labels("dead-run"), **{"io.conformance.pid": str(dead_proc.pid)})
    live = run_labels("live-run")
    tools = images["tools"]
    made = []
    try:
        for labels in (dead, live):
            net = client.networks.create(f"conformance-test-{labels['io.conformance.run']}", labels=labels)
            vol = client.volumes.create(labels=labels)
            con = client.containers.run(tools, ["sleep", "600"], detach=True, init=True, labels=labels,
                                        network=net.name, volumes={vol.name: {"bind": "/data", "mode": "rw"}})
            made.append((con, net, vol))
        removed = remove_leftovers(client)
        (dcon, dnet, dvol), (lcon, lnet, lvol) = made
        assert dcon.name in removed["containers"] and dnet.name in removed["networks"] and dvol.name in removed["volumes"]
        now = labelled(client)
        assert dcon.name not in now["containers"] and dnet.name not in now["networks"] and dvol.name not in now["volumes"]
        assert lcon.name in now["containers"] and lnet.name in now["networks"] and lvol.name in now["volumes"]
    finally:
        import docker.errors
        for con, net, vol in made:
            for action in (partial(con.remove, force=True), net.remove, partial(vol.remove, force=True)):
                try:
                    action()
                except docker.errors.NotFound:
                    pass
