"""Offline viewers of evidence (report/trajectories.html)."""
