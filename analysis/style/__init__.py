"""The report's single matplotlib style file and its colour-blind-safe palette (Okabe-Ito)."""

from __future__ import annotations

from pathlib import Path

from analysis.locations import package_path

MATPLOTLIBRC: Path = package_path("style", "matplotlibrc")
"""Path of the one style file every figure is drawn under."""

OKABE_ITO: dict[str, str] = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "green": "#009E73",
    "purple": "#CC79A7",
    "sky": "#56B4E9",
    "vermillion": "#D55E00",
    "yellow": "#F0E442",
    "black": "#000000",
    "grey": "#999999",
}
"""Okabe & Ito (2008) colours by name; figures refer to these, never to raw hex."""
