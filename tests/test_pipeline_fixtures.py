"""fixtures/histories stays what the stories of tests/stories/ write (pure Python)."""

from __future__ import annotations

from conformance import config
from stories import eager_story, write_cell


def test_fixture_histories_are_current(tmp_path):
    write_cell(tmp_path, "cooperative-clean", scenario="rolling-restart")
    write_cell(tmp_path, "cooperative-r2-overlap", "r2", scenario="rolling-restart")
    write_cell(tmp_path, "cooperative-r2-allowed-pause", "r2-allowed", scenario="pause")
    eager_story(tmp_path, "eager-clean", scenario="upgrade-eager-to-cooperative")
    fixtures = config.FIXTURES_DIR / "histories"
    made = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert made == sorted(p.relative_to(fixtures) for p in fixtures.rglob("*") if p.is_file() and p.name != "README.md")
    for rel in made:
        assert (fixtures / rel).read_bytes() == (tmp_path / rel).read_bytes(), rel
