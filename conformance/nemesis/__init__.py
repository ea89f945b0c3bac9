"""nemesis."""
