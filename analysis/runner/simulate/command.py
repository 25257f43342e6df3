"""``python -m analysis.runner simulate TRUTH``: the simulated summariser served for one sweep.

Methods note. The truth file is read and checked (analysis.evidence.truth: every bad value is
refused naming its key) before anything starts; then the summariser
(analysis.runner.simulate.summariser) is served on a free loopback port, probed and swept like
any endpoint by analysis.runner.cli, and stopped at the end, also on an error or interrupt. The
package it writes says ``kind = "simulation"`` and records the truth file's name, SHA-256 and
text in study.toml's ``[simulation]`` table (:func:`simulation_toml`), from which the analysis
computes the planted values beside its estimates.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from analysis.evidence.truth import Truth, read_truth
from analysis.runner.arms import load_arms
from analysis.runner.fixture import Fixture
from analysis.runner.simulate.server import ResponderServer
from analysis.runner.simulate.summariser import SimulatedSummariser

SIM_MODEL = "simulated-summariser"
"""The model id the simulated endpoint serves and the sweep requests."""


def load_checked_truth(path: str) -> Truth:
    """The truth file at ``path``, checked against the arms that exist (TruthError naming the key)."""
    return read_truth(path, tuple(load_arms()))


@contextmanager
def simulated_server(path: str, fixtures: Sequence[Fixture], arms: Mapping[str, Any], *,
                     salt: str = "") -> Iterator[tuple[ResponderServer, Truth]]:
    """Check the truth file, then serve the summariser on loopback for the ``with`` block."""
    truth = load_checked_truth(path)
    model = SimulatedSummariser(truth, fixtures, arms, salt=salt, model=SIM_MODEL)
    with ResponderServer(model, model=SIM_MODEL, keep_requests=False) as server:
        yield server, truth


def simulation_toml(path: str, truth: Truth) -> str:
    """study.toml's ``[simulation]`` table: the truth file's name, SHA-256 and text."""
    return ("[simulation]\n"
            f"truth_file = {json.dumps(Path(path).name)}\n"
            f"truth_sha256 = {json.dumps(truth.sha256)}\n"
            f"truth = {json.dumps(truth.text)}\n")
