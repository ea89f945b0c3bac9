"""P1's stories (progress; check in conformance/pipeline/checks/progress.py): hand-made histories
with real timing, one cell per variant of one story (:func:`progress_story`).

Every story has java m1 and the reference member m2 in a cooperative group on
topic t (4 partitions), the producer writing at the scenarios' rate (200
records/s: a batch of 5 records to each partition every 100 ms, acknowledged
as produced, until 90 s), each owner reading every batch 7 ms after it was
acknowledged, and the manifest timing of the hand-made stories' (session 10 s,
heartbeat 1 s, max poll 30 s); P1's bound for m2 is its own: the reference's 0.2 s fetch wait plus
the 30 s max poll interval, 30.2 s. Tests: tests/test_pipeline_progress.py.
"""

from __future__ import annotations

from pathlib import Path

from stories.builder import CellBuilder

T = "t"
PARTS = [(T, p) for p in range(4)]
TICK_MS = 100          # 4 partitions x 5 records every 100 ms = 200 records/s, the scenarios' producer rate
BATCH = 5
READ_AFTER_MS = 7      # an owner's fetch returns a batch a few ms after its acknowledgement
PRODUCE_FROM, PRODUCE_TO = 1500, 90000
END = 94500.0        # the scenario's end (manifest end_ts); members are stopped after it, at teardown


def progress_story(root: Path, run_id: str, variant: str) -> Path:
    """Story (every variant): m1 starts at 1 s and leads generation 1, taking t-0..3. m2 starts at
    10 s; generation 2 (11 s) keeps t-0, t-1 with m1, which commits and revokes t-2, t-3 and rejoins
    3 ms later; the follow-up generation 3 gives them to m2, which records them assigned once it
    has their positions (11.235 s). Owners read every batch as it comes, from the position the
    previous owner reached. The producer stops at 90 s (``await drained``), everything is read, and
    m1 and m2 close at 95 s (revoke, stop).

    ``clean``: nothing else happens; P1 holds.
    ``stalled``: from 15 s m2 reads nothing more of t-3 (it keeps owning it, heartbeating and
    reading t-2): records wait 80 s, P1 fails naming t-3 and m2.
    ``paused-long``: m2 is paused (SIGSTOP) at 20 s and resumed at 70 s. Its session expires at 30
    s: generation 4 (m1 alone) gives m1 t-2, t-3, which reads them from m2's position. Resumed, m2
    learns it was fenced (UNKNOWN_MEMBER_ID on its heartbeat) and records t-2, t-3 lost at 70.02 s;
    it rejoins at once, generation 5 takes t-2, t-3 from m1 (revoked at 70.14 s) and the follow-up
    generation 6 gives them back to m2. m2's history owned t-3 from 20 s to 70 s with records
    waiting and nothing read: 50 s, but all inside the pause's window: allowed (P1/fault-window).
    ``paused-outlived``: m2 is paused at 20 s for 5 s (inside its session: nothing moves); resumed,
    it reads t-2 again but never t-3 until it closes at 95 s: a stall of 80 s, and a pause shorter
    than the session opens no fault window: a violation.
    ``paused-short``: m2 reads nothing of t-3 from 15 s to 56 s (41 s, more than the bound); a
    5 s pause at 30 s, shorter than its session, would have cut that stall into stretches of 15 and
    10 s outside its window (to 46 s) but opens none: a violation.
    ``broker-twice``: the broker is restarted at 20 s (back at 25 s) and at 55 s (back at 60 s); m2
    reads nothing of t-3 from 15 s until it closes at 95 s. Outside the two windows (to 36 s and to
    71 s) lie 5, 19 and 24 s: none longer than the bound, 48 s in all: a violation.
    ``rebalancing``: m2 reads nothing of t-3 from 15 s to 52 s (37 s). It sent its JoinGroup of
    generation 4 at 20 s and was answered at 34.9 s (m1 rejoined late); the SyncGroup answer came at
    35 s with the same assignment. 15 s of the stall is m2's own rebalance, 22 s lies outside it:
    allowed (P1/rebalance).
    """
    b = CellBuilder(root, run_id, scenario=f"progress-{variant}", topics={T: 4})
    acts: list[tuple[float, int, object]] = []

    def at(ts: float, fn, *args, **kw) -> None:
        acts.append((float(ts), len(acts), lambda: fn(*args, **kw)))

    all4, low, high = PARTS, PARTS[:2], PARTS[2:]
    # Who owns what when, per partition: (member, from, to) -- the histories' assigned/revoked/lost.
    owners: dict[tuple, list[tuple[str, float, float]]] = {tp: [("m1", 2110, 94990)] for tp in low}
    paused: dict[str, list[tuple[float, float]]] = {"m1": [], "m2": []}
    # tp -> (member, from, to): the owner reads nothing of it from ``from`` until ``to``.
    stalled: dict[tuple, tuple[str, float, float]] = {}

    at(1000, b.started, "m1", 1000)
    at(2000, b.join, 1, 2000, "m1", {"m1": b.subscription("m1")})
    at(2100, b.sync, 1, 2100, "m1", {"m1": all4})
    at(2110, b.assigned, "m1", 2110, all4)
    at(10000, b.started, "m2", 10000)
    at(11000, b.join, 2, 11000, "m1", {"m1": b.subscription("m1", owned=all4, generation=1), "m2": b.subscription("m2")})
    at(11100, b.sync, 2, 11100, "m1", {"m1": low, "m2": []})
    at(11120, b.revoked, "m1", 11120, high)
    at(11123, b.join, 3, 11123, "m1", {"m1": b.subscription("m1", owned=low, generation=2),
                                        "m2": b.subscription("m2", generation=2)})
    at(11223, b.sync, 3, 11223, "m1", {"m1": low, "m2": high})
    at(11235, b.assigned, "m2", 11235, high)
    for tp in high:
        owners[tp] = [("m1", 2110, 11120), ("m2", 11235, 95040)]

    if variant == "stalled":
        stalled[(T, 3)] = ("m2", 15000, float("inf"))
    elif variant == "paused-long":
        at(20000, b.fault, 20000, "pause", "m2")
        paused["m2"].append((20000, 70000))
        # m2's session expires at 30 s: m1 alone forms generation 4 and takes t-2, t-3.
        at(30000, b.join, 4, 30000, "m1", {"m1": b.subscription("m1", owned=low, generation=3)})
        at(30100, b.sync, 4, 30100, "m1", {"m1": all4})
        at(30110, b.assigned, "m1", 30110, high)
        at(70000, b.fault, 70000, "resume", "m2", phase="heal")
        at(70020, b.lost, "m2", 70020, high)
        at(70023, b.join, 5, 70023, "m1", {"m1": b.subscription("m1", owned=all4, generation=4),
                                            "m2": b.subscription("m2")})
        at(70123, b.sync, 5, 70123, "m1", {"m1": low, "m2": []})
        at(70140, b.revoked, "m1", 70140, high)
        at(70143, b.join, 6, 70143, "m1", {"m1": b.subscription("m1", owned=low, generation=5),
                                            "m2": b.subscription("m2", generation=5)})
        at(70243, b.sync, 6, 70243, "m1", {"m1": low, "m2": high})
        at(70255, b.assigned, "m2", 70255, high)
        for tp in high:
            owners[tp] = [("m1", 2110, 11120), ("m2", 11235, 70020), ("m1", 30110, 70140), ("m2", 70255, 95040)]
    elif variant == "paused-outlived":
        at(20000, b.fault, 20000, "pause", "m2")
        paused["m2"].append((20000, 25000))
        at(25000, b.fault, 25000, "resume", "m2", phase="heal")
        stalled[(T, 3)] = ("m2", 20000, float("inf"))
    elif variant == "paused-short":
        at(30000, b.fault, 30000, "pause", "m2")
        paused["m2"].append((30000, 35000))
        at(35000, b.fault, 35000, "resume", "m2", phase="heal")
        stalled[(T, 3)] = ("m2", 15000, 56000)
    elif variant == "broker-twice":
        for down, up in ((20000, 25000), (55000, 60000)):
            at(down, b.fault, down, "broker-restart", "broker")
            at(up, b.fault, up, "broker-restart", "broker", phase="heal")
        stalled[(T, 3)] = ("m2", 15000, float("inf"))
    elif variant == "rebalancing":
        at(20000, b.join, 4, 34900, "m1", {"m1": b.subscription("m1", owned=low, generation=3),
                                            "m2": b.subscription("m2", owned=high, generation=3)},
           sent={"m1": 20000, "m2": 20000})
        at(35000, b.sync, 4, 35000, "m1", {"m1": low, "m2": high})
        stalled[(T, 3)] = ("m2", 15000, 52000)
    elif variant != "clean":
        raise ValueError(variant)

    # The producer, and every owner reading what was acknowledged, from the group's position.
    acked = {tp: 0 for tp in all4}       # next offset to produce
    position = {tp: 0 for tp in all4}    # next offset to read (committed by the owner after each batch)
    for tick in range(PRODUCE_FROM, PRODUCE_TO, TICK_MS):
        for i, tp in enumerate(all4):
            at(tick + i, b.produced, tick + i, T, tp[1], acked[tp], acked[tp] + BATCH - 1)
            acked[tp] += BATCH
    ticks = list(range(PRODUCE_FROM, PRODUCE_TO + 2 * TICK_MS, TICK_MS))
    produced_at = {tp: [(tick + i, (tick - PRODUCE_FROM) // TICK_MS * BATCH + BATCH)
                        for tick in range(PRODUCE_FROM, PRODUCE_TO, TICK_MS)] for i, tp in enumerate(all4)}
    for tick in ticks:
        for i, tp in enumerate(all4):
            ts = tick + i + READ_AFTER_MS
            upto = max([n for a, n in produced_at[tp] if a <= ts] or [0])
            live = [m for m, s, e in owners[tp] if s < ts < e and not any(p0 <= ts < p1 for p0, p1 in paused[m])
                    and not (tp in stalled and stalled[tp][0] == m and stalled[tp][1] <= ts < stalled[tp][2])]
            if live and upto > position[tp]:
                at(ts, b.consumed, live[-1], ts, T, tp[1], position[tp], upto - 1)
                position[tp] = upto
    at(94990, b.revoked, "m1", 94990, low)
    at(95000, b.stopped, "m1", 95000)
    at(95040, b.revoked, "m2", 95040, high)
    at(95050, b.stopped, "m2", 95050)

    for _, _, fn in sorted(acts, key=lambda a: (a[0], a[1])):
        fn()
    return b.write(END, start_ts=0.0)


#: The variants, each a cell of the catalog named ``p1-<variant>`` (stories.catalog_dirs).
VARIANTS = ("clean", "stalled", "paused-long", "paused-outlived", "paused-short", "broker-twice", "rebalancing")
