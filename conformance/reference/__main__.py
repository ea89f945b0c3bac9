"""``python -m conformance.reference CONFIG_JSON``: run one reference consumer (harness contract): the classic
member, or the KIP-848 member when the config says ``group_protocol: "consumer"``.

Exit codes: 0 after a graceful SIGTERM close; 1 when the client became unusable
(a fatal ``error`` event says why); 2 when the config itself is unusable.
"""

from __future__ import annotations

import signal
import sys

from conformance.errors import UsageError
from conformance.history import HistoryWriter
from conformance.members.harness_config import HarnessConfig


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m conformance.reference CONFIG_JSON", file=sys.stderr)
        return 2
    try:
        cfg = HarnessConfig.load(args[0])
    except (OSError, ValueError, UsageError) as exc:
        print(f"reference: unusable config {args[0]}: {exc}", file=sys.stderr)
        return 2
    history = HistoryWriter(cfg.history_path, cfg.member, "reference", cfg.client_version)
    from conformance.reference.consumer_member import ConsumerProtocolMember
    from conformance.reference.consuming import FatalClientError
    from conformance.reference.member import ReferenceMember

    try:
        member = (ConsumerProtocolMember if cfg.group_protocol == "consumer" else ReferenceMember)(cfg, history)
    except (UsageError, FatalClientError, ValueError) as exc:
        history.record("error", error=f"unusable configuration: {exc}", fatal=True)
        history.close()
        print(f"reference: {exc}", file=sys.stderr)
        return 1 if isinstance(exc, FatalClientError) else 2  # a setting no member could run with: 2
    signal.signal(signal.SIGTERM, lambda *_: member.stop_event.set())
    signal.signal(signal.SIGINT, lambda *_: member.stop_event.set())
    try:
        return member.run()
    finally:
        history.close()


if __name__ == "__main__":
    sys.exit(main())
