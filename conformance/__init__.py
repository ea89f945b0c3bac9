"""Interoperability conformance suite for Kafka consumer groups (KIP-429).

The vocabulary follows Jepsen: *cluster* (broker, toxiproxy, wire tap),
*members* (client harnesses and the reference consumer), *nemesis* (faults),
*scenarios* (what happens when), *history* (what was observed) and the
*pipeline* (pure checks over histories, run on Spark).
"""

__version__ = "0.1.0"
