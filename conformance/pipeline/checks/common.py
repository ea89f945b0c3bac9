"""Helpers shared by the checks: violation rows, partition lists, timing bounds."""

from __future__ import annotations

from typing import Any

from pyspark.sql import functions as F

from conformance import config


def violation(invariant: str, run: str, message: str, *, members: list[str] | None = None,
              generation: int | None = None, partitions: list | None = None, ts: float | None = None,
              evidence: dict[str, Any] | None = None) -> dict:
    """A contract-section-7 Violation, plus its ``run``."""
    return {"run": run, "invariant": invariant, "message": message,
            "members": sorted({m for m in (members or []) if m}), "generation": generation,
            "partitions": sorted([[str(p[0]), int(p[1])] for p in (partitions or [])]), "ts": ts,
            "evidence": evidence or {}}


def tps(rows) -> list[list]:
    """[[topic, partition], ...] from structs/rows with topic and partition."""
    return sorted([[r["topic"], int(r["partition"])] for r in (rows or [])])


def fmt_tps(parts) -> str:
    items = sorted((p[0], int(p[1])) for p in parts)
    return ", ".join(f"{t}-{p}" for t, p in items) or "(none)"


def timing(cells):
    """Per-run bounds derived from the manifest timing (defaults from config only when absent)."""
    return cells.select(
        "run",
        F.coalesce("session_timeout_ms", F.lit(float(config.SESSION_TIMEOUT_MS))).alias("session_ms"),
        F.coalesce("heartbeat_interval_ms", F.lit(float(config.HEARTBEAT_INTERVAL_MS))).alias("heartbeat_ms"),
        F.coalesce("max_poll_interval_ms", F.lit(float(config.MAX_POLL_INTERVAL_MS))).alias("max_poll_ms"),
        # Bounds the runner did not write: a rebalance needs at most a session timeout to notice a dead
        # member plus a rebalance timeout (= max poll interval) for the others to rejoin.
        F.coalesce("convergence_bound_ms", F.coalesce("session_timeout_ms", F.lit(float(config.SESSION_TIMEOUT_MS)))
                   + F.coalesce("max_poll_interval_ms", F.lit(float(config.MAX_POLL_INTERVAL_MS)))).alias("convergence_ms"),
        F.coalesce("revoke_bound_ms", F.coalesce("max_poll_interval_ms", F.lit(float(config.MAX_POLL_INTERVAL_MS))))
        .alias("revoke_ms"),
        "expected_protocol", "last_fault_ts", "end_ts", "leader_rotation", "scenario",
    )
