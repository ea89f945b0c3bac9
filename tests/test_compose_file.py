"""docker-compose.yml and docker/compose/*.json are what the kind registry makes of them
(conformance.containers.compose_file): a kind added to or dropped from the registry, or a default
version moved, leaves them stale until the generator is run, and this test says so."""

from __future__ import annotations

import json

from conformance import config
from conformance.containers import compose_file
from conformance.members.kinds import KIND_MODULES, default_version


def test_the_committed_compose_files_are_the_generated_ones() -> None:
    stale = [str(p.relative_to(config.REPO_ROOT)) for p in compose_file.stale_files()]
    assert not stale, f"{stale} differ from the registry's; run: python -m conformance.containers.compose_file"


def test_every_kind_has_its_service_proxy_and_config_at_its_default_version() -> None:
    files = compose_file.compose_files()
    text = files[compose_file.COMPOSE_FILE]
    proxies = json.loads(files[compose_file.CONFIG_DIR / "toxiproxy.json"])
    assert [p["name"] for p in proxies] == list(KIND_MODULES)
    for i, kind in enumerate(KIND_MODULES):
        assert f"\n  {kind}:\n    <<: *member\n" in text
        assert f"image: conformance-member-{kind}:{default_version(kind)}" in text
        assert f"SLOT{i}://toxiproxy:{19100 + i}" in text
        cfg = json.loads(files[compose_file.CONFIG_DIR / f"{kind}.json"])
        assert (cfg["client"], cfg["client_version"], cfg["bootstrap_servers"]) == (
            kind, default_version(kind), f"toxiproxy:{19100 + i}")


def test_check_names_a_stale_file_and_write_restores_it(tmp_path, monkeypatch, capsys) -> None:
    # A copy of the committed files with one member config edited by hand: --check exits 1 naming
    # it (and writes nothing), a write puts the generated text back, and --check is then quiet.
    monkeypatch.setattr(compose_file, "COMPOSE_FILE", tmp_path / "docker-compose.yml")
    monkeypatch.setattr(compose_file, "CONFIG_DIR", tmp_path / "docker" / "compose")
    monkeypatch.setattr(config, "REPO_ROOT", tmp_path)
    assert compose_file.main([]) == 0
    edited = tmp_path / "docker" / "compose" / "java.json"
    edited.write_text(edited.read_text().replace("toxiproxy:", "broker:"))
    leftover = tmp_path / "docker" / "compose" / "gone.json"
    leftover.write_text("{}\n")
    assert compose_file.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert "docker/compose/java.json differs" in err and "docker/compose/gone.json differs" in err
    assert "broker:" in edited.read_text() and leftover.exists()
    assert compose_file.main([]) == 0 and compose_file.main(["--check"]) == 0
    assert not leftover.exists()
