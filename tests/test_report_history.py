"""History across nights (conformance.report.history): newly failing, first night failed, flaky
across nights, per spec; pure, on hand-written nights."""

from __future__ import annotations

from conformance.report import history


def _night(name: str, **statuses: str) -> dict:
    return {"night": name, "entries": [{"broker_version": "4.4.0", "scenario": "pause", "a": a, "b": "java@4.4.0",
                                        "status": s} for a, s in statuses.items()]}


def test_newly_failing_first_failed_and_flaky_across_nights(tmp_path):
    # Night 1 green; night 2: sarama fails; night 3: sarama still fails and librdkafka starts to.
    nights = [_night("20261124T020000Z-plan-a", sarama="pass", librdkafka="pass", reference="pass"),
              _night("20261125T020000Z-plan-b", sarama="fail", librdkafka="pass", reference="pass"),
              _night("20261126T020000Z-plan-c", sarama="fail", librdkafka="flaky", reference="pass")]
    for n in nights:
        history.record({"runs": [{"run": n["night"].split("-", 1)[1], "time": None}], "entries": n["entries"]},
                       tmp_path)
    loaded = history.load(tmp_path)
    assert len(loaded) == 3
    h = history.analyse(nights)
    assert h["last_green"] == "20261124T020000Z-plan-a" and h["latest"] == nights[-1]["night"]
    by = {e["entry"].split(" · ")[2].split(" × ")[0]: e for e in h["entries"]}
    # Since the last green night (night 1), both failing entries are new.
    assert by["sarama"]["newly_failing"] and by["librdkafka"]["newly_failing"] and not by["reference"]["newly_failing"]
    assert by["sarama"]["first_failed"] == "20261125T020000Z-plan-b"
    assert by["librdkafka"]["first_failed"] == "20261126T020000Z-plan-c"
    assert by["sarama"]["flaky_across_nights"] and not by["reference"]["flaky_across_nights"]
    assert h["specs"]["java@4.4.0"] == {nights[0]["night"]: 0, nights[1]["night"]: 1, nights[2]["night"]: 2}
    page = history.render(h)
    assert page.count("<li>4.4.0 · pause · ") == 2 and "first night failed" in page


def test_without_a_green_night_the_night_before_is_the_reference():
    nights = [_night("20261125T020000Z-plan-b", sarama="fail", librdkafka="pass"),
              _night("20261126T020000Z-plan-c", sarama="fail", librdkafka="fail")]
    h = history.analyse(nights)
    assert h["last_green"] is None and h["reference"] == "20261125T020000Z-plan-b"
    new = [e["entry"] for e in h["entries"] if e["newly_failing"]]
    assert new == ["4.4.0 · pause · librdkafka × java@4.4.0"]


def test_an_unreadable_night_is_named_and_left_out(tmp_path, capsys):
    (tmp_path / "bad.json").write_text("{")
    history.record({"runs": [{"run": "plan-x", "time": 1_764_122_400_000}], "entries": []}, tmp_path)
    assert [n["night"] for n in history.load(tmp_path)] == ["20251126T020000Z-plan-x"]  # 1764122400000 ms
    assert "skipped" in capsys.readouterr().err
